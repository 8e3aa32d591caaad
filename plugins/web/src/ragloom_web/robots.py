"""robots.txt (RFC 9309) rules, cached per site.

Parsing and matching are protego's (user-agent groups, longest match wins,
``*`` and ``$``). What a fetch result means follows RFC 9309 §2.3.1:

- 2xx: the parsed rules;
- 4xx other than 429 ("unavailable"), or more than five redirects: everything allowed;
- 429, 5xx or a network failure ("unreachable"): everything disallowed;

each cached until ``robots_cache_ttl`` seconds have passed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import attrs

MAX_ROBOTS_BYTES = 512 * 1024  # RFC 9309: parse at least 500 KiB


@attrs.frozen(kw_only=True)
class RobotsRules:
    """What one site's robots.txt says; ``policy`` is ``rules``, ``allow-all`` or ``disallow-all``."""

    policy: str
    content: str = ""
    why: str = ""
    _parser: object = attrs.field(default=None, alias="parser")

    @classmethod
    def parse(cls, content: str) -> RobotsRules:
        """Rules from the text of a robots.txt."""
        from protego import Protego

        return cls(policy="rules", content=content, parser=Protego.parse(content))

    def allows(self, url: str, user_agent: str) -> bool:
        """True when ``user_agent`` may fetch ``url``."""
        if self.policy == "allow-all":
            return True
        if self.policy == "disallow-all":
            return False
        return bool(self._parser.can_fetch(url, user_agent))  # type: ignore[attr-defined]

    def crawl_delay(self, user_agent: str) -> float | None:
        """The ``Crawl-delay`` for ``user_agent``, when the file sets one."""
        if self._parser is None:
            return None
        delay = self._parser.crawl_delay(user_agent)  # type: ignore[attr-defined]
        return float(delay) if delay is not None else None


def rules_for_status(status: int, content: str) -> RobotsRules:
    """RFC 9309 §2.3.1: what a robots.txt response with ``status`` means."""
    if 200 <= status < 300:
        return RobotsRules.parse(content)
    if status == 429 or status >= 500:
        return RobotsRules(policy="disallow-all", why=f"robots.txt is unreachable (HTTP {status})")
    if 300 <= status < 400:
        return RobotsRules(policy="allow-all", why=f"robots.txt redirects too often (HTTP {status})")
    return RobotsRules(policy="allow-all", why=f"robots.txt is unavailable (HTTP {status})")


class RobotsCache:
    """Rules per site (``scheme://host:port``), fetched once per ``ttl`` even when threads ask together."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic):
        self.ttl = ttl
        self.clock = clock
        self._entries: dict[str, tuple[float, RobotsRules]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, site: str, fetch: Callable[[], RobotsRules]) -> RobotsRules:
        """Cached rules of ``site``, calling ``fetch`` when there are none or they expired."""
        with self._guard:
            lock = self._locks.setdefault(site, threading.Lock())
        with lock:
            entry = self._entries.get(site)
            now = self.clock()
            if entry is not None and entry[0] > now:
                return entry[1]
            rules = fetch()
            self._entries[site] = (self.clock() + self.ttl, rules)
            return rules

    def clear(self) -> None:
        """Forget every site."""
        with self._guard:
            self._entries.clear()
