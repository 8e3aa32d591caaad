"""The ``multi_query`` retriever: search the query and LLM-written variants of it, merge.

- an *expander* makes variants: a Python callable ``expander(query) -> list[str]``,
  or (from config) the pipeline's LLM asked with ``prompt``, one variant per line;
- variants are trimmed, stripped of list markers, de-duplicated case-insensitively
  (also against the original) and capped at ``max_queries``;
- the original query is always searched; all queries run concurrently on the
  base retriever (``base = { type = "hybrid", ... }``, default similarity);
- results are merged by best score per chunk (``metadata["matched_queries"]``
  lists the queries that found it);
- if expansion fails the original is searched alone (a warning is logged); if
  some searches fail the others are used; if every search fails the first
  error is raised.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import attrs

from ragloom.errors import ConfigError
from ragloom.retrievers.base import Retriever, RetrieverOptions, Scope
from ragloom.types import Result

if TYPE_CHECKING:
    from ragloom.plugins import BuildContext

logger = logging.getLogger(__name__)

DEFAULT_PROMPT = (
    "You help a search engine. Write {n} different rephrasings of the question below, "
    "using other words and synonyms, to find documents that answer it.\n"
    "Answer with one rephrasing per line and nothing else.\n\nQuestion: {query}"
)

_MARKER = re.compile(r"^\s*(?:[-*\u2022]+|\(?\d+[.)\]:]|[a-z][.)])\s+", re.IGNORECASE)

Expander = Callable[[str], Sequence[str]]


def _check_base(_instance: Any, attribute: Any, value: dict[str, Any]) -> None:
    if not isinstance(value.get("type"), str) or not value["type"]:
        raise ValueError(f"'{attribute.name}' needs a 'type' (a retriever name such as \"hybrid\" or \"similarity\")")
    if value["type"] == "multi_query":
        raise ValueError(f"'{attribute.name}' cannot be multi_query itself")


def _check_prompt(_instance: Any, attribute: Any, value: str) -> None:
    if "{query}" not in value:
        raise ValueError(f"'{attribute.name}' must contain {{query}}")


@attrs.frozen(kw_only=True)
class MultiQueryConfig(RetrieverOptions):
    """Search the query plus up to ``max_queries`` variants on the ``base`` retriever."""

    max_queries: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    base: dict[str, Any] = attrs.field(factory=lambda: {"type": "similarity"}, validator=_check_base)
    prompt: str = attrs.field(default=DEFAULT_PROMPT, validator=_check_prompt)
    max_workers: int = attrs.field(default=4, validator=attrs.validators.gt(0))


def parse_variants(text: str) -> list[str]:
    """One variant per non-empty line, list markers and quotes removed."""
    out = []
    for line in text.splitlines():
        line = _MARKER.sub("", line).strip().strip('"').strip()
        if line:
            out.append(line)
    return out


def clean_variants(query: str, variants: Sequence[str], cap: int) -> list[str]:
    """Trimmed, case-insensitively unique variants other than ``query``, at most ``cap``."""
    seen = {query.strip().casefold()}
    out: list[str] = []
    for variant in variants:
        if not isinstance(variant, str):
            continue
        text = " ".join(variant.split())
        key = text.casefold()
        if not text or key in seen:
            continue
        seen.add(key)
        out.append(text)
        if len(out) >= cap:
            break
    return out


def llm_expander(generate: Callable[[str], str], prompt: str, n: int) -> Expander:
    """An expander that asks an LLM for ``n`` variants with ``prompt``."""

    def expand(query: str) -> list[str]:
        values = {"n": str(n), "query": query}
        return parse_variants(generate(re.sub(r"\{(n|query)\}", lambda m: values[m.group(1)], prompt)))

    return expand


class MultiQueryRetriever:
    """Query expansion around a base retriever, merged by best score per chunk."""

    def __init__(self, config: MultiQueryConfig, *, base: Retriever, expander: Expander | None):
        self.config = config
        self.base = base
        self.expander = expander
        self._scope = Scope(config)

    def expand(self, query: str) -> list[str]:
        """The queries to search: the original first, then the cleaned variants."""
        if self.expander is None or self.config.max_queries == 0:
            return [query]
        try:
            variants = self.expander(query)
            if isinstance(variants, str):
                variants = parse_variants(variants)
            cleaned = clean_variants(query, list(variants), self.config.max_queries)
        except Exception as exc:  # noqa: BLE001 - any expander failure falls back to the original query
            logger.warning("multi_query: query expansion failed (%s: %s); searching the original query alone", type(exc).__name__, exc)
            return [query]
        return [query, *cleaned]

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        """Merged results of every query, best first."""
        c = self.config
        request = self._scope(top_k, threshold, filter)
        k, cutoff, where = request.top_k, request.threshold, request.filter
        queries = self.expand(query)

        def run(text: str) -> list[Result]:
            return list(self.base.retrieve(text, top_k=k, threshold=cutoff, filter=where))

        outcomes: list[list[Result] | BaseException] = []
        if len(queries) == 1:
            outcomes.append(run(queries[0]))
        else:
            with ThreadPoolExecutor(max_workers=min(c.max_workers, len(queries))) as pool:
                futures = [pool.submit(run, text) for text in queries]
                for future in futures:
                    try:
                        outcomes.append(future.result())
                    except Exception as exc:  # noqa: BLE001 - collected, raised below if all fail
                        outcomes.append(exc)
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        if errors and len(errors) == len(outcomes):
            raise errors[0]
        for text, outcome in zip(queries, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                logger.warning("multi_query: retrieval failed for variant %r (%s: %s)", text, type(outcome).__name__, outcome)
        return merge_results(queries, outcomes, k)


def merge_results(queries: Sequence[str], outcomes: Sequence[Any], k: int) -> list[Result]:
    """Best score per chunk across the queries' result lists, top ``k``, ties by first appearance."""
    best: dict[str, Result] = {}
    matched: dict[str, list[str]] = {}
    for text, outcome in zip(queries, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            continue
        for result in outcome:
            matched.setdefault(result.chunk_id, []).append(text)
            current = best.get(result.chunk_id)
            if current is None or result.score > current.score:
                best[result.chunk_id] = result
    order = {cid: i for i, cid in enumerate(best)}
    ranked = sorted(best.values(), key=lambda r: (-r.score, order[r.chunk_id]))[:k]
    return [r.with_score(r.score, matched_queries=matched[r.chunk_id]) for r in ranked]


def build_multi_query(config: MultiQueryConfig, context: BuildContext, *, expander: Expander | None = None) -> MultiQueryRetriever:
    """The retriever with its base built through the registry and its expander from the LLM."""
    options = {key: value for key, value in config.base.items() if key != "type"}
    base = context.build("retriever", config.base["type"], options, path="$.retriever.base")
    if expander is None and context.llm is not None:
        from ragloom.llm import as_generate

        expander = llm_expander(as_generate(context.llm, what="multi_query"), config.prompt, config.max_queries)
    if expander is None:
        raise ConfigError("the multi_query retriever needs an LLM to write query variants: add an [llm] table (or pass .llm(client))")
    return MultiQueryRetriever(config, base=base, expander=expander)
