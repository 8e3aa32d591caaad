"""The README's set-up commands: safe on a PEP 668 system Python, and exactly what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.DOTALL | re.MULTILINE)


def readme_commands() -> list[str]:
    return [block.strip() for block in CONSOLE.findall((REPO / "README.md").read_text(encoding="utf-8"))]


def test_readme_has_the_two_set_up_commands() -> None:
    quickstart, suite = readme_commands()[:2]
    assert "ragloom -c examples/quickstart/ragloom.toml query" in quickstart
    assert "nox -s tests models" in suite


def test_no_readme_command_installs_into_the_system_python() -> None:
    """Debian/Ubuntu refuse `python3 -m pip install` outside a virtual environment (PEP 668)."""
    for command in readme_commands()[:2]:
        for step in command.split("&&"):
            words = step.split()
            if "pip" in words or (len(words) > 1 and words[1:3] == ["-m", "pip"]):
                assert words[0] == ".venv/bin/pip", step
            assert words[0] in ("python3", ".venv/bin/pip", ".venv/bin/ragloom", ".venv/bin/nox"), step
            if words[0] == "python3":
                assert words[1:3] == ["-m", "venv"], step


def test_ci_runs_exactly_the_readme_test_command() -> None:
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    runs = [line for line in commands if "nox" in line]
    assert runs[0] == readme_commands()[1]  # the whole suite, typecheck included, is the README command
