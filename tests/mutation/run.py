"""Mutation testing with mutmut 3, one module at a time (``nox -s mutation``; not part of CI).

mutmut 3 imports the mutated code from ``mutants/src``, so each module runs in a
staging folder of its own (``build/mutation/<module>/``) laid out the way it
expects: every package of the checkout under ``src/`` (``core/src/ragloom`` and
``plugins/*/src/*``), the test folders under ``tests/``, and a ``pyproject.toml``
whose ``[tool.mutmut]`` mutates only that module's files and runs only its
targeted tests (see :data:`MODULES`), so a module takes minutes, not hours.

Usage::

    python tests/mutation/run.py                    # every module, security ones first
    python tests/mutation/run.py confine addresses  # some modules
    python tests/mutation/run.py --report           # docs/testing.md table from the saved results
    python tests/mutation/run.py --collect pipeline # save the results of an interrupted run
    python tests/mutation/run.py --rerun confine    # survivors and unchecked mutants again, against today's tests
    python tests/mutation/run.py --rerun-survivors pipeline  # only the survivors

Each run saves ``tests/mutation/results/<module>.json`` (mutmut's own status of
every mutant); ``--report`` turns them, with ``tests/mutation/equivalent.toml``
(surviving mutants explained as equivalent), into the table in ``docs/testing.md``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
BUILD = REPO / "build" / "mutation"

#: the store contract's tests that exercise a filter (the targeted tests of a store's SQL translation)
_FILTER_TESTS = [
    "test_filter_matches_memory_semantics", "test_every_filter_form_matches_memory_semantics", "test_delete_with_filter", "test_filter_keys_are_literal",
    "test_pipeline_filters", "test_hand_built_filter_trees",
]

#: the tests of BM25 and of text analysis
_KEYWORD_TESTS = [
    "tests/retrieval/test_keyword.py", "tests/retrieval/test_keyword_edges.py", "tests/retrieval/test_analysis.py", "tests/stores/test_keyword_index.py",
    "tests/retrieval/test_keyword_mutants.py", "tests/retrieval/test_keyword_mutants_ceiling.py", "tests/retrieval/test_keyword_ties.py",
]

#: the web tests without a bound on seconds (fetch's selection)
_WEB_ASYNC_UNTIMED = [
    "test_aingest_fetches_a_sitemap_on_the_event_loop", "test_requests_run_on_the_loop_thread_not_in_workers",
    "test_a_redirect_to_a_private_address_is_refused_on_the_async_path", "test_dns_is_resolved_once_and_checked_on_the_async_path",
    "test_a_gzip_bomb_is_cut_at_max_response_bytes_on_the_async_path", "test_a_declared_oversized_body_is_refused_before_reading_on_the_async_path",
    "test_a_body_of_exactly_max_response_bytes_is_read_whole_on_the_async_path",
]
_WEB_HARDENING_UNTIMED = [
    "test_hostile_redirects_are_web_loader_errors", "test_a_hostile_redirect_is_one_failure_of_an_ingest",
    "test_secrets_never_reach_another_site_nor_its_robots_txt", "test_robots_txt_of_another_site_fetched_first_gets_no_secret",
    "test_blocked_networks_hold_for_every_ipv6_form_of_an_ipv4_address", "test_blocked_networks_hold_for_resolved_names",
    "test_loopback_still_loads_beside_a_blocked_network",
]
_WEB_SITEMAP_UNTIMED = [
    "test_a_sitemap_gives_one_document_per_page_in_order", "test_a_failing_page_does_not_lose_the_others", "test_skip_policy_logs_failures_instead",
    "test_a_sitemap_index_is_followed", "test_listed_urls_are_checked_like_any_other", "test_two_urls_redirecting_to_one_page_give_one_document",
    "test_per_host_concurrency", "test_politeness_delay_spaces_requests_to_one_site", "test_load_many", "test_bad_sitemaps_are_refused",
    "test_max_sitemap_urls",
]

#: module -> (files to mutate, relative to the staged ``src/``; tests to run, relative to the staged root)
MODULES: dict[str, tuple[list[str], list[str]]] = {
    # security-relevant (goal: 100 %)
    "confine": (["ragloom/confine.py"], ["tests/test_confine.py", "tests/test_tools.py"]),
    "tools": (["ragloom/tools.py"], ["tests/test_tools.py", "tests/test_tools_export.py", "tests/test_confine.py"]),
    "addresses": (["ragloom_web/addresses.py"], ["tests/plugin_web/test_web_addresses.py", "tests/plugin_web/test_web_ssrf.py"]),
    "robots": (["ragloom_web/robots.py"], ["tests/plugin_web/test_web_robots_rules.py", "tests/plugin_web/test_web_robots.py"]),
    # the promises (goal: >= 95 %)
    "pipeline": (
        ["ragloom/pipeline.py"],
        [
            "tests/test_pipeline.py", "tests/test_ingest_promises.py", "tests/test_pipeline_surface.py", "tests/stores/test_memory_contract.py",
            "tests/test_tools.py", "tests/test_pipeline_hints_and_builder.py",
            "tests/test_ingest_batching.py", "tests/test_sources_api.py", "tests/chunkers/test_per_call_chunker.py",
            "tests/retrieval/test_query_options.py", "tests/test_pipeline_mutants_ingest.py", "tests/test_pipeline_mutants_query.py",
            "tests/test_pipeline_mutants_assembly.py", "tests/test_pipeline_mutants_batching.py", "tests/test_pipeline_mutants_ingest_path.py",
            "tests/test_pipeline_mutants_visibility.py", "tests/test_pipeline_mutants_unrun.py", "tests/test_pipeline_mutants_metadata.py",
            "tests/test_async.py",  # not test_async_latency.py: its event-loop latency check fails under nice 19 on a busy machine
        ],
    ),
    "filters": (["ragloom/filters.py"], ["tests/test_filters.py", "tests/stores/test_memory_contract.py"]),
    # the SQL translation of filters, against the contract's filter tests on a real database
    "duckdb_sqlfilter": (
        ["ragloom_duckdb/sqlfilter.py"],
        [*(f"tests/plugin_duckdb/test_duckdb_contract.py::TestDuckDBFileContract::{t}" for t in _FILTER_TESTS), "tests/plugin_duckdb/test_duckdb_sqlfilter_mutants.py"],
    ),
    "pgvector_sqlfilter": (["ragloom_pgvector/sqlfilter.py"], [f"tests/plugin_pgvector/test_pgvector_contract.py::TestPgVectorContract::{t}" for t in _FILTER_TESTS]),
    "keyword": (["ragloom/keyword.py"], _KEYWORD_TESTS),
    # the analyzer on its own (split from "keyword" when its word table replaced the stem cache)
    "analysis": (["ragloom/analysis.py"], _KEYWORD_TESTS),
    # the sentence splitter on its own (a part of "chunkers" small enough for a busy machine)
    "chunker_sentences": (["ragloom/chunkers/sentences.py", "ragloom/chunkers/sentence.py"], ["tests/chunkers/test_chunker_sentence.py", "tests/chunkers/test_chunker_tokens.py", "tests/chunkers/test_chunker_sentence_edges.py"]),
    # the rest of the chunkers, split so each part finishes on a busy machine: the default (recursive) first
    "chunker_recursive": (
        ["ragloom/chunkers/recursive.py", "ragloom/chunkers/packing.py", "ragloom/chunkers/pieces.py"],
        [
            "tests/chunkers/test_chunker_recursive_edges.py", "tests/chunkers/test_chunker_contract.py", "tests/chunkers/test_chunker_golden.py",
            "tests/chunkers/test_chunker_tokens.py", "tests/chunkers/test_per_call_chunker.py",
            "tests/chunkers/test_chunker_properties.py::test_recursive", "tests/chunkers/test_chunker_properties.py::test_token_sizing",
            "tests/chunkers/test_chunker_piece_edges.py", "tests/chunkers/test_chunker_token_separators.py",
            "tests/chunkers/test_chunker_recursive_mutants_tokens.py", "tests/chunkers/test_chunker_recursive_mutants_trim.py",
        ],
    ),
    "chunker_base": (
        ["ragloom/chunkers/base.py", "ragloom/chunkers/fixed.py", "ragloom/chunkers/plugin.py"],
        [
            "tests/chunkers/test_chunker_base_edges.py", "tests/chunkers/test_chunker_contract.py", "tests/chunkers/test_chunker_registration.py",
            "tests/chunkers/test_per_call_chunker.py", "tests/chunkers/test_chunker_properties.py::test_fixed_and_sentence",
            "tests/chunkers/test_chunker_fingerprint_values.py",
        ],
    ),
    "chunker_markdown": (
        ["ragloom/chunkers/markdown.py"],
        [
            "tests/chunkers/test_chunker_markdown.py", "tests/chunkers/test_chunker_markdown_edges.py", "tests/chunkers/test_chunker_markdown_structure.py", "tests/chunkers/test_chunker_piece_edges.py", "tests/chunkers/test_chunker_contract.py",
            "tests/chunkers/test_chunker_golden.py", "tests/chunkers/test_chunker_properties.py::test_markdown",
            "tests/chunkers/test_chunker_properties.py::test_found_by_hypothesis_leading_whitespace_overlap",
            "tests/chunkers/test_chunker_properties.py::test_repeated_passages_get_their_own_offsets",
            "tests/chunkers/test_chunker_markdown_mutants_blocks.py",
        ],
    ),
    "chunker_tokens": (
        ["ragloom/chunkers/tokens.py"],
        [
            "tests/chunkers/test_chunker_token_measure.py", "tests/chunkers/test_chunker_tokens.py", "tests/chunkers/test_chunker_properties.py::test_token_sizing",
            "tests/chunkers/test_chunker_contract.py",
            "tests/chunkers/test_chunker_sentence_edges.py", "tests/chunkers/test_chunker_recursive_edges.py::test_token_overlap_carries_whole_pieces_only",
            "tests/chunkers/test_chunker_tokens_mutants_tiktoken.py", "tests/chunkers/test_chunker_tokens_mutants_cuts.py",
            "tests/chunkers/test_chunker_tokens_mutants_fit.py",
        ],
    ),
    "chunker_semantic": (
        ["ragloom/chunkers/semantic.py"],
        ["tests/chunkers/test_chunker_semantic_edges.py", "tests/chunkers/test_chunker_semantic_mutants.py", "tests/chunkers/test_chunker_semantic.py", "tests/chunkers/test_chunker_properties.py::test_semantic", "tests/chunkers/test_chunker_contract.py"],
    ),
    "memory_store": (["ragloom/stores/memory.py"], ["tests/stores/test_memory_contract.py", "tests/stores/test_memory_store_behaviour.py", "tests/stores/test_memory_store_mutants.py"]),
    "duckdb_store": (
        ["ragloom_duckdb/store.py", "ragloom_duckdb/session.py"],
        [
            "tests/plugin_duckdb/test_duckdb_contract.py", "tests/plugin_duckdb/test_duckdb_store.py", "tests/plugin_duckdb/test_duckdb_checkpoint.py",
            # hybrid candidates, the keyword ceiling, source counts, the plan and the HNSW path (the contract calls none of them)
            "tests/plugin_duckdb/test_duckdb_store_behaviour.py", "tests/retrieval/test_hybrid_candidates.py::test_one_call_path_equals_two_searches[duckdb]",
            "tests/plugin_duckdb/test_duckdb_source_type.py", "tests/plugin_duckdb/test_duckdb_hints.py",
            # the refusals and commit counts written against the store's survivors
            "tests/plugin_duckdb/test_duckdb_store_mutants_session.py", "tests/plugin_duckdb/test_duckdb_store_mutants_reads.py",
            "tests/plugin_duckdb/test_duckdb_store_mutants_spill.py", "tests/plugin_duckdb/test_duckdb_store_mutants_delete.py",
            "tests/plugin_duckdb/test_duckdb_store_mutants_batch.py", "tests/plugin_duckdb/test_duckdb_store_mutants_open.py",
            "tests/plugin_duckdb/test_duckdb_store_mutants_apply.py",
            "tests/plugin_duckdb/test_duckdb_store_mutants_batch43.py",
            "tests/plugin_duckdb/test_duckdb_store_mutants_batch41.py",
            "tests/plugin_duckdb/test_duckdb_store_mutants_batch42.py",
            "tests/plugin_duckdb/test_duckdb_keyword_ties.py",
            # the memory_limit reaching DuckDB (not the file's other test: a store larger than its limit)
            "tests/plugin_duckdb/test_duckdb_memory_limit.py::test_the_limit_reaches_duckdb_and_spills_beside_the_file",
            # not: test_duckdb_crash / _hnsw_crash (SIGKILLed children), _lifecycle (child processes held for a minute),
            # _memory_limit (a store larger than its limit), _hnsw (recall over thousands of chunks; the behaviour file covers the path)
        ],
    ),
    "pgvector_store": (
        ["ragloom_pgvector/store.py"],
        [
            "tests/plugin_pgvector/test_pgvector_contract.py", "tests/plugin_pgvector/test_pgvector_injection.py",
            # the HNSW plan and search, the vacuum after a bulk write, cut connections (test_pgvector_faults cuts every
            # connection of the server: never run it by hand against the server a mutation run uses)
            "tests/plugin_pgvector/test_pgvector_search.py", "tests/plugin_pgvector/test_pgvector_vacuum.py",
            "tests/plugin_pgvector/test_pgvector_faults.py", "tests/plugin_pgvector/test_pgvector_errors.py",
            # schema versioning and its migration, the extension check, the source_type column (reach __init__'s schema steps)
            "tests/plugin_pgvector/test_pgvector_schema.py", "tests/plugin_pgvector/test_pgvector_source_type.py",
            # written against this module's survivors
            "tests/plugin_pgvector/test_pgvector_store_mutants_copy.py", "tests/plugin_pgvector/test_pgvector_store_mutants_messages.py",
            "tests/plugin_pgvector/test_pgvector_store_mutants_writes.py", "tests/plugin_pgvector/test_pgvector_store_mutants_search.py",
            "tests/plugin_pgvector/test_pgvector_lock_keys.py", "tests/plugin_pgvector/test_pgvector_open_builds_index.py",
            "tests/plugin_pgvector/test_pgvector_open_edges.py", "tests/plugin_pgvector/test_pgvector_store_mutants_survivors.py",
            "tests/plugin_pgvector/test_pgvector_store_mutants_survivors2.py",
            "tests/plugin_pgvector/test_pgvector_store_mutants_states.py", "tests/plugin_pgvector/test_pgvector_store_mutants_explain.py",
            "tests/plugin_pgvector/test_pgvector_connection_lost.py",
            "tests/plugin_pgvector/test_pgvector_store_mutants_sessions.py",
            "tests/plugin_pgvector/test_pgvector_store_mutants_rows.py",
            "tests/plugin_pgvector/test_pgvector_store_mutants_commits.py",
        ],
    ),
    "qdrant_store": (
        ["ragloom_qdrant/store.py", "ragloom_qdrant/filters.py"],
        [
            "tests/plugin_qdrant/test_qdrant_store.py", "tests/plugin_qdrant/test_qdrant_contract.py", "tests/plugin_qdrant/test_qdrant_kill.py",
            # written against this module's survivors
            "tests/plugin_qdrant/test_qdrant_filters_mutants_fields.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_open.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_migrate.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_calls.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_messages.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_wait.py", "tests/plugin_qdrant/test_qdrant_store_mutants_shared.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_search.py", "tests/plugin_qdrant/test_qdrant_store_mutants_offsets.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_q2_recover.py", "tests/plugin_qdrant/test_qdrant_store_mutants_q2_flip.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_q2_migrate.py", "tests/plugin_qdrant/test_qdrant_store_mutants_q2_reads.py",
            "tests/plugin_qdrant/test_qdrant_store_mutants_q3_stages.py", "tests/plugin_qdrant/test_qdrant_store_mutants_q3_writes.py",
            "tests/plugin_qdrant/test_qdrant_partial_writes.py",
        ],
    ),
    # the web tests that fetch, without the timed ones (an upper bound on seconds fails on a starved machine and stops
    # mutmut's stats and clean runs: the total_timeout drips; the crawl delay measured at the server) and without the
    # unit tests of other modules (addresses, robots rules)
    "fetch": (
        ["ragloom_web/fetch.py"],
        [
            "tests/plugin_web/test_web_fetch_limits.py", "tests/plugin_web/test_web_responses.py", "tests/plugin_web/test_web_ssrf.py",
            "tests/plugin_web/test_web_robots.py", "tests/plugin_web/test_web_pipeline.py", "tests/plugin_web/test_web_plugin.py",
            "tests/plugin_web/test_web_fetch_robots_edges.py",
            "tests/plugin_web/test_web_fetch_mutants_robots.py",
            "tests/plugin_web/test_web_fetch_mutants_requests.py",
            "tests/plugin_web/test_web_fetch_mutants_deadline.py",
            "tests/plugin_web/test_web_fetch_mutants_body.py",
            *(f"tests/plugin_web/test_web_async.py::{t}" for t in _WEB_ASYNC_UNTIMED),
            *(f"tests/plugin_web/test_web_hardening.py::{t}" for t in _WEB_HARDENING_UNTIMED),
            *(f"tests/plugin_web/test_web_sitemap.py::{t}" for t in _WEB_SITEMAP_UNTIMED),
        ],
    ),
}


def _stage(module: str) -> Path:
    """A fresh staging folder for ``module``: packages under src/, tests under tests/, the mutmut config."""
    root = BUILD / module
    if root.exists():
        shutil.rmtree(root)
    (root / "src").mkdir(parents=True)
    packages = [REPO / "core" / "src" / "ragloom"] + [p for p in sorted((REPO / "plugins").glob("*/src/*")) if (p / "__init__.py").exists()]
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in packages:
        shutil.copytree(package, root / "src" / package.name, ignore=ignore)
    _copy_tests(root)
    for extra in ("examples", "docs"):  # fixtures some tests read (the quickstart corpus)
        shutil.copytree(REPO / extra, root / extra, ignore=ignore)
    _write_config(root, module)
    return root


def _write_config(root: Path, module: str) -> None:
    """The staged ``pyproject.toml``: mutmut mutates only ``module``'s files and runs only its targeted tests."""
    files, tests = MODULES[module]
    quoted = ", ".join(json.dumps(f"src/{f}") for f in files)
    selection = ", ".join(json.dumps(t) for t in tests)
    (root / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = [{quoted}]\n"
        f"pytest_add_cli_args_test_selection = [{selection}]\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-x", "-q", "--timeout=300"]\n'
        'also_copy = ["examples", "docs"]\n'
        "\n[tool.pytest.ini_options]\n"
        'pythonpath = ["tests"]\n'
        'markers = ["slow: long", "models: torch"]\n',
        encoding="utf-8",
    )


def _copy_tests(root: Path) -> None:
    """The checkout's tests into ``root/tests`` (plugin tests as ``tests/plugin_<name>``), without hypothesis deadlines."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    if (root / "tests").exists():
        shutil.rmtree(root / "tests")
    shutil.copytree(REPO / "tests", root / "tests", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "mutation"))
    for plugin_tests in sorted((REPO / "plugins").glob("*/tests")):
        shutil.copytree(plugin_tests, root / "tests" / f"plugin_{plugin_tests.parent.name.replace('-', '_')}", ignore=ignore)
    with (root / "tests" / "conftest.py").open("a", encoding="utf-8") as conftest:
        # a loaded machine must not turn a slow example into a kill: no deadline, the same examples every run
        conftest.write(
            "\n\nfrom hypothesis import settings as _settings\n\n"
            '_settings.register_profile("mutation", deadline=None, derandomize=True, print_blob=False)\n'
            '_settings.load_profile("mutation")\n'
        )


def rerun(module: str, *, unchecked: bool = True) -> dict[str, object]:
    """Run the surviving (and not yet checked) mutants of ``module`` again against today's tests."""
    root = BUILD / module
    if not (root / "pyproject.toml").exists():  # a fresh checkout: stage the module again (mutmut names are stable)
        _stage(module)
    previous = json.loads((RESULTS / f"{module}.json").read_text(encoding="utf-8"))["mutants"]
    again = ("survived", "no tests", "not checked") if unchecked else ("survived", "no tests")  # "not checked": a stopped run
    survivors = [name for name, status in previous.items() if status in again]
    _copy_tests(root)
    _write_config(root, module)  # today's test selection
    (root / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)  # new tests: map tests to functions again
    started = time.monotonic()
    if survivors:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", "1", *survivors], cwd=root, env=env, check=False)
    result = collect(module, round(time.monotonic() - started))
    statuses: dict[str, str] = result["mutants"]  # type: ignore[assignment]
    for name, status in previous.items():  # mutants killed before stay killed
        if name not in survivors:
            statuses[name] = status
    (RESULTS / f"{module}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return result


def run(module: str) -> dict[str, object]:
    """Run mutmut for ``module`` in its staging folder; save and return the counts."""
    root = _stage(module)
    started = time.monotonic()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    mutmut = [sys.executable, "-m", "mutmut"]
    subprocess.run([*mutmut, "run", "--max-children", os.environ.get("MUTATION_CHILDREN", "1")], cwd=root, env=env, check=False)
    return collect(module, round(time.monotonic() - started))


def collect(module: str, seconds: int | None = None) -> dict[str, object]:
    """Save the status of every mutant of ``module`` from its staging folder (also of an interrupted run:
    the mutants it did not reach stay ``not checked``)."""
    root = BUILD / module
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=root, env=env, capture_output=True, text=True, check=False)
    statuses: dict[str, str] = {}
    for line in listing.stdout.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if name:
            statuses[name] = status
    result = {"module": module, "files": MODULES[module][0], "tests": MODULES[module][1], "seconds": seconds, "mutants": statuses}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{module}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return result


def main(argv: list[str]) -> int:
    if argv[:1] in (["--rerun"], ["--rerun-survivors"]):
        for module in argv[1:]:
            rerun(module, unchecked=argv[0] == "--rerun")
        return 0
    if argv[:1] == ["--collect"]:
        for module in argv[1:]:
            collect(module)
        return 0
    if argv[:1] == ["--report"]:
        from report import write_report  # type: ignore[import-not-found]

        write_report()
        return 0
    modules = argv or list(MODULES)
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        print(f"unknown module(s) {unknown}; known: {', '.join(MODULES)}", file=sys.stderr)
        return 2
    for module in modules:
        result = run(module)
        counts: dict[str, int] = {}
        for status in result["mutants"].values():  # type: ignore[union-attr]
            counts[status] = counts.get(status, 0) + 1
        print(f"{module}: {counts} in {result['seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main(sys.argv[1:]))
