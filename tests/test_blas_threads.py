"""`import ragloom` limits OpenBLAS's idle spin, only before numpy loads and only if the user has not chosen."""

from __future__ import annotations

import os
import subprocess
import sys

from ragloom.blas_threads import SPIN_TIMEOUT, limit_idle_spin

PROBE = "import os, sys; {first}; print(os.environ.get('OPENBLAS_THREAD_TIMEOUT', 'unset'), 'numpy' in sys.modules)"


def _run(first: str, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run([sys.executable, "-c", PROBE.format(first=first)], env={**clean, **env}, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_importing_ragloom_first_sets_the_spin_timeout_before_numpy_loads() -> None:
    assert _run("import ragloom") == [SPIN_TIMEOUT, "True"]
    assert int(SPIN_TIMEOUT) < 28  # below OpenBLAS's own default, or it would change nothing


def test_a_value_the_user_set_is_kept() -> None:
    assert _run("import ragloom", OPENBLAS_THREAD_TIMEOUT="24") == ["24", "True"]


def test_nothing_is_set_once_numpy_is_loaded() -> None:
    # OpenBLAS has read its settings by then; a variable set afterwards would only mislead
    assert _run("import numpy; import ragloom") == ["unset", "True"]


def test_limit_idle_spin_leaves_a_process_with_numpy_alone() -> None:
    assert "numpy" in sys.modules  # this test process has loaded it
    environ: dict[str, str] = {}
    assert limit_idle_spin(environ) is False
    assert environ == {}
