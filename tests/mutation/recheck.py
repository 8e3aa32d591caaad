"""Run the surviving mutants of a module again against today's tests, without a whole new mutmut run.

For each mutant ``results/<module>.json`` lists as surviving, the diff mutmut
shows for it (``mutmut show``, in the module's staging folder) is applied to the
checkout's file, the module's tests run (``-x``), and the file is restored. A
mutant the tests now fail on is saved as ``killed (recheck)``.

Usage: ``python tests/mutation/recheck.py confine addresses``. With ``RECHECK_QUICK_ONLY=1`` only a
module's quick tests run (for survivors of a finished run, which the rest of its tests already let through).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from report import _equivalent  # noqa: E402
from run import BUILD, MODULES, RESULTS  # noqa: E402

SURVIVED = {"survived", "no tests"}


def _checkout_path(staged: str) -> Path:
    """The checkout's file for a staged ``src/<package>/...`` path."""
    relative = Path(staged).relative_to("src")
    package = relative.parts[0]
    if package == "ragloom":
        return REPO / "core" / "src" / relative
    for root in (REPO / "plugins").glob(f"*/src/{package}"):
        return root.parent / relative
    raise FileNotFoundError(staged)


def _diff(module: str, mutant: str) -> str:
    shown = subprocess.run([sys.executable, "-m", "mutmut", "show", mutant], cwd=BUILD / module, capture_output=True, text=True, check=True)
    return shown.stdout


def _apply(original: str, diff: str) -> str | None:
    """``original`` with the mutant's hunk applied (mutmut shows a function dedented, lines counted from the def)."""
    body = diff.split("\n@@", 1)[1].split("\n", 1)[1].splitlines()
    before = [line[1:] for line in body if line[:1] in (" ", "-")]
    after = [line[1:] for line in body if line[:1] in (" ", "+")]
    for indent in ("", "    ", "        "):
        old = "\n".join(indent + line if line else line for line in before)
        if original.count(old) == 1:
            return original.replace(old, "\n".join(indent + line if line else line for line in after))
    return None


def _tests(module: str) -> list[str]:
    out = []
    for test in MODULES[module][1]:
        path = Path(test)
        if path.parts[1].startswith("plugin_"):
            path = Path("plugins", path.parts[1][len("plugin_") :].replace("_", "-"), "tests", *path.parts[2:])
        out.append(str(path))
    return out


#: pytest options selecting a module's fast tests (the races and servers run only for mutants these miss)
QUICK: dict[str, list[str]] = {
    "confine": ["-k", "not race and not swap"],
    "addresses": ["-k", "not every_ipv4_spelling and not every_ipv6_embedding"],
}

#: a module's quick tests, when they are a file of their own rather than a ``-k`` selection
QUICK_FILES: dict[str, list[str]] = {
    "tools": ["tests/test_tools.py"],
    "duckdb_sqlfilter": ["plugins/duckdb/tests/test_duckdb_contract.py::TestDuckDBFileContract::test_hand_built_filter_trees"],
    "pgvector_sqlfilter": ["plugins/pgvector/tests/test_pgvector_contract.py::TestPgVectorContract::test_hand_built_filter_trees"],
    "fetch": [
        "plugins/web/tests/test_web_async.py", "plugins/web/tests/test_web_fetch_limits.py", "plugins/web/tests/test_web_fetch_robots_edges.py",
        "plugins/web/tests/test_web_fetch_mutants_robots.py", "plugins/web/tests/test_web_fetch_mutants_requests.py",
        "plugins/web/tests/test_web_fetch_mutants_deadline.py",
    ],
    "duckdb_store": ["plugins/duckdb/tests/test_duckdb_store_behaviour.py"],
    "pgvector_store": ["plugins/pgvector/tests/test_pgvector_errors.py"],
    # the behaviour tests written against memory_store's survivors (they passed the contract already)
    "memory_store": ["tests/stores/test_memory_store_behaviour.py", "tests/stores/test_memory_store_mutants.py"],
    # the tests written against keyword's survivors
    "keyword": ["tests/retrieval/test_keyword_edges.py", "tests/retrieval/test_keyword_mutants.py"],
    # the tests written against the pipeline's survivors (a survivor of a finished run already passed the rest)
    "pipeline": [
        "tests/test_pipeline_mutants_ingest.py", "tests/test_pipeline_mutants_query.py",
        "tests/test_pipeline_mutants_assembly.py", "tests/test_pipeline_mutants_batching.py", "tests/test_pipeline_mutants_ingest_path.py",
        "tests/test_pipeline_mutants_visibility.py", "tests/test_pipeline_mutants_unrun.py",
    ],
}


def _pytest(module: str, options: list[str], tests: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--timeout=300", *options, *(tests or _tests(module))],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )


def recheck(module: str) -> None:
    path = RESULTS / f"{module}.json"
    result = json.loads(path.read_text(encoding="utf-8"))
    statuses: dict[str, str] = result["mutants"]
    equivalent = _equivalent()
    for mutant, status in sorted(statuses.items(), reverse=bool(os.environ.get("RECHECK_REVERSE"))):
        if status not in SURVIVED or mutant in equivalent:  # an explained mutant survives by definition
            continue
        diff = _diff(module, mutant)
        header = next(line for line in diff.splitlines() if line.startswith("--- "))
        target = _checkout_path(header[4:].strip().removeprefix("a/"))
        original = target.read_text(encoding="utf-8")

        def restore(*_: object, target: Path = target, original: str = original) -> None:
            target.write_text(original, encoding="utf-8")
            raise SystemExit(1)

        signal.signal(signal.SIGTERM, restore)
        try:
            mutated = _apply(original, diff)
            if mutated is None:
                print(f"{mutant}: the diff does not apply", flush=True)
                continue
            target.write_text(mutated, encoding="utf-8")
            ran = _pytest(module, QUICK.get(module, []), QUICK_FILES.get(module))  # quick tests first; a mutant they miss runs them all
            if not ran.returncode and not os.environ.get("RECHECK_QUICK_ONLY"):  # only: the rest already ran on it
                ran = _pytest(module, [])
        finally:
            target.write_text(original, encoding="utf-8")
        now = "killed (recheck)" if ran.returncode else status
        statuses[mutant] = now
        print(f"{mutant}: {now}", flush=True)
        path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        recheck(name)
