"""robots.txt rules and their cache without a network: every status boundary, every policy, the TTL edge."""

from __future__ import annotations

import threading

import pytest

from ragloom_web.robots import RobotsCache, RobotsRules, rules_for_status

ROBOTS = "User-agent: *\nDisallow: /private\nCrawl-delay: 2.5\n\nUser-agent: picky\nDisallow: /\n"


@pytest.mark.parametrize(
    ("status", "policy", "why"),
    [
        (100, "allow-all", "robots.txt is unavailable (HTTP 100)"),
        (199, "allow-all", "robots.txt is unavailable (HTTP 199)"),
        (200, "rules", ""),
        (204, "rules", ""),
        (299, "rules", ""),
        (300, "allow-all", "robots.txt redirects too often (HTTP 300)"),
        (399, "allow-all", "robots.txt redirects too often (HTTP 399)"),
        (400, "allow-all", "robots.txt is unavailable (HTTP 400)"),
        (404, "allow-all", "robots.txt is unavailable (HTTP 404)"),
        (428, "allow-all", "robots.txt is unavailable (HTTP 428)"),
        (429, "disallow-all", "robots.txt is unreachable (HTTP 429)"),
        (430, "allow-all", "robots.txt is unavailable (HTTP 430)"),
        (499, "allow-all", "robots.txt is unavailable (HTTP 499)"),
        (500, "disallow-all", "robots.txt is unreachable (HTTP 500)"),
        (599, "disallow-all", "robots.txt is unreachable (HTTP 599)"),
    ],
)
def test_every_status_boundary_means_what_rfc_9309_says(status: int, policy: str, why: str) -> None:
    rules = rules_for_status(status, ROBOTS)
    assert rules.policy == policy
    assert rules.why == why
    if policy == "rules":
        assert rules.content == ROBOTS
        assert rules.allows("http://a.example/public", "bot") is True
        assert rules.allows("http://a.example/private/x", "bot") is False
    else:
        assert rules.content == ""
        assert rules.allows("http://a.example/private/x", "bot") is (policy == "allow-all")
        assert rules.allows("http://a.example/", "picky") is (policy == "allow-all")
        assert rules.crawl_delay("bot") is None


def test_parsed_rules_match_user_agent_groups_and_crawl_delay() -> None:
    rules = RobotsRules.parse(ROBOTS)
    assert rules.policy == "rules" and rules.why == ""
    assert rules.allows("http://a.example/", "bot") is True
    assert rules.allows("http://a.example/", "picky") is False
    delay = rules.crawl_delay("bot")
    assert delay == 2.5 and isinstance(delay, float)
    assert rules.crawl_delay("picky") is None
    assert RobotsRules.parse("User-agent: *\nCrawl-delay: 3\n").crawl_delay("x") == 3.0
    assert RobotsRules.parse("").allows("http://a.example/anything", "bot") is True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_cache_holds_rules_for_exactly_ttl_seconds_per_site() -> None:
    clock = Clock()
    cache = RobotsCache(ttl=10.0, clock=clock)
    assert cache.ttl == 10.0
    fetched: list[str] = []

    def fetcher(site: str, policy: str) -> object:
        def fetch() -> RobotsRules:
            fetched.append(site)
            return RobotsRules(policy=policy)

        return fetch

    first = cache.get("http://a.example:80", fetcher("a", "allow-all"))  # type: ignore[arg-type]
    assert first.policy == "allow-all" and fetched == ["a"]
    clock.now = 109.999
    assert cache.get("http://a.example:80", fetcher("a", "disallow-all")) is first  # type: ignore[arg-type]
    other = cache.get("http://b.example:80", fetcher("b", "disallow-all"))  # type: ignore[arg-type]
    assert other.policy == "disallow-all" and fetched == ["a", "b"]
    clock.now = 110.0  # expired exactly at fetch time + ttl
    again = cache.get("http://a.example:80", fetcher("a", "disallow-all"))  # type: ignore[arg-type]
    assert again.policy == "disallow-all" and fetched == ["a", "b", "a"]
    clock.now = 119.5  # the new entry lives from its own fetch time (110) until 120
    assert cache.get("http://a.example:80", fetcher("a", "allow-all")) is again  # type: ignore[arg-type]
    assert cache.get("http://b.example:80", fetcher("b", "allow-all")) is other  # fetched at 109.999: until 119.999  # type: ignore[arg-type]
    cache.clear()
    clock.now = 119.6
    assert cache.get("http://a.example:80", fetcher("a", "allow-all")).policy == "allow-all"  # type: ignore[arg-type]
    assert fetched == ["a", "b", "a", "a"]


def test_the_cache_expiry_counts_from_the_end_of_a_slow_fetch() -> None:
    clock = Clock()
    cache = RobotsCache(ttl=5.0, clock=clock)

    def slow() -> RobotsRules:
        clock.now += 3.0  # the fetch itself took 3 s
        return RobotsRules(policy="allow-all")

    cache.get("s", slow)
    clock.now = 107.5  # 4.5 s after the fetch ended, 7.5 s after it started
    assert cache.get("s", lambda: RobotsRules(policy="disallow-all")).policy == "allow-all"


def test_threads_asking_together_fetch_once() -> None:
    cache = RobotsCache(ttl=60.0)
    calls: list[int] = []
    gate = threading.Event()

    def fetch() -> RobotsRules:
        calls.append(1)
        gate.wait(timeout=5)
        return RobotsRules(policy="allow-all")

    results: list[RobotsRules] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("site", fetch))) for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(timeout=10)
    assert len(results) == 4 and len(calls) == 1 and all(r is results[0] for r in results)


def test_a_slow_site_does_not_hold_up_another_site() -> None:
    """Each site has its own lock: while one site's robots.txt is being fetched, another's is served."""
    cache = RobotsCache(ttl=60.0)
    release = threading.Event()
    fetching = threading.Event()

    def slow() -> RobotsRules:
        fetching.set()
        release.wait(timeout=30)
        return RobotsRules(policy="disallow-all")

    first = threading.Thread(target=lambda: cache.get("http://slow.example", slow))
    first.start()
    assert fetching.wait(timeout=30)
    other: list[RobotsRules] = []
    second = threading.Thread(target=lambda: other.append(cache.get("http://fast.example", lambda: RobotsRules(policy="allow-all"))))
    second.start()
    second.join(timeout=20)
    served_while_blocked = not second.is_alive() and not release.is_set()
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
    assert served_while_blocked, "the fast site waited for the slow one"
    assert [r.policy for r in other] == ["allow-all"]
