"""Keep numpy's idle BLAS threads from spinning on the cores a model needs.

OpenBLAS (numpy's BLAS) keeps its worker threads busy-waiting for about a
tenth of a second after every threaded product, such as a vector search's
matrix-vector scan. In a process that also runs a model (torch, for the
query embedding), those spinning threads take the cores the model's own
threads need: on 2 cores a MiniLM query embedding right after a 5,000-row scan
took 36 ms against 17 ms alone (``bench/retrieval/blas_spin.py``). With
``OPENBLAS_THREAD_TIMEOUT=16`` (2**16 cycles, tens of microseconds) the workers
go to sleep almost at once, and the two add up as they should.

OpenBLAS reads the variable once, when numpy loads it. So it is set, when the
user has not set it, only if numpy is not loaded yet: in ``ragloom`` commands
and in programs that import ragloom before numpy. It changes nothing else.
"""

from __future__ import annotations

import os
import sys

SPIN_TIMEOUT = "16"
"""OpenBLAS's idle spin before its threads sleep, as a power of two of CPU cycles (its own default: 28)."""


def limit_idle_spin(environ: dict[str, str] | None = None) -> bool:
    """Set ``OPENBLAS_THREAD_TIMEOUT`` unless set already or numpy is loaded; True when it was set."""
    env = os.environ if environ is None else environ
    if "numpy" in sys.modules or "OPENBLAS_THREAD_TIMEOUT" in env:
        return False
    env["OPENBLAS_THREAD_TIMEOUT"] = SPIN_TIMEOUT
    return True


limit_idle_spin()
