"""The results table of docs/testing.md, from ``results/<module>.json``, ``equivalent.toml`` and ``equivalent/*.toml``.

Score = killed / (mutants − equivalent). A timeout counts as killed (the mutant
hung the tests, mutmut's own convention); a mutant no test reaches ("no tests")
counts as surviving. A module with no saved result is listed as not run.
"""

from __future__ import annotations

import json
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DOC = REPO / "docs" / "testing.md"
BEGIN, END = "<!-- mutation-results:begin -->", "<!-- mutation-results:end -->"
KILLED = {"killed", "killed (recheck)", "timeout", "caught by type check"}


def _equivalent() -> dict[str, str]:
    """Every explained survivor: ``equivalent.toml`` and one ``equivalent/<module>.toml`` per module that has one."""
    found: dict[str, str] = {}
    for path in [HERE / "equivalent.toml", *sorted((HERE / "equivalent").glob("*.toml"))]:
        if path.exists():
            found.update(tomllib.loads(path.read_text(encoding="utf-8")).get("equivalent", {}))
    return found


def table() -> str:
    from run import MODULES  # type: ignore[import-not-found]

    equivalent = _equivalent()
    rows = [
        "| module | files | mutants | killed | survived (equivalent) | survived (not equivalent) | of which no test reaches | not run | score |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    survivors: list[str] = []
    for module, (files, _tests) in MODULES.items():
        path = HERE / "results" / f"{module}.json"
        shown = ", ".join(f"`{f}`" for f in files)
        if not path.exists():
            rows.append(f"| {module} | {shown} | – | – | – | – | – | whole module | not run |")
            continue
        statuses: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))["mutants"]
        killed = sum(1 for s in statuses.values() if s in KILLED)
        unchecked = sum(1 for s in statuses.values() if s in {"not checked", "skipped"})
        equal = [m for m, s in statuses.items() if s not in KILLED and s not in {"not checked", "skipped"} and m in equivalent]
        alive = [m for m, s in statuses.items() if s not in KILLED and s not in {"not checked", "skipped"} and m not in equivalent]
        judged = len(statuses) - len(equal) - unchecked
        score = f"{100 * killed / judged:.1f} %" if judged else "–"
        unreached = sum(1 for m in alive if statuses[m] == "no tests")
        partial = " (partial run)" if unchecked else ""
        rows.append(f"| {module} | {shown} | {len(statuses)} | {killed} | {len(equal)} | {len(alive)} | {unreached} | {unchecked} | {score}{partial} |")
        if len(alive) <= 40:
            survivors += [f"- `{m}` ({statuses[m]})" for m in sorted(alive)]
        else:
            survivors.append(f"- {module}: {len(alive)} mutants (listed in `tests/mutation/results/{module}.json`)")
    out = "\n".join(rows) + "\n"
    if survivors:
        out += "\nSurviving mutants not (yet) killed nor explained:\n\n" + "\n".join(survivors) + "\n"
    if equivalent:
        out += "\nEquivalent mutants (explained in `tests/mutation/equivalent.toml` and `tests/mutation/equivalent/<module>.toml`):\n\n"
        out += "\n".join(f"- `{m}`: {' '.join(why.split())}" for m, why in sorted(equivalent.items())) + "\n"
    return out


def write_report() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + table() + text[end:], encoding="utf-8")
