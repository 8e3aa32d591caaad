"""Keep numpy's BLAS threads off the cores a model on the CPU needs.

OpenBLAS (numpy's BLAS) keeps its worker threads spinning for about a tenth
of a second after every threaded product, such as a vector search's scan. In
a process that runs a model on the CPU, those threads take the cores torch's
own threads need for the next embedding: on 2 cores a 5,000-row scan followed
by a MiniLM query embedding took 48 ms, against 17 ms with numpy's BLAS at one
thread (``bench/retrieval/blas_spin.py``). torch does its own matrix work (its own
OpenMP pool), so numpy's BLAS at one thread costs the model nothing; a single
query's scan then runs on the calling thread, and no thread spins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_THREADS: int | None = 1
"""The ``blas_threads`` option's default: numpy's BLAS on the calling thread while a CPU model is loaded."""


def limit_numpy_blas(threads: int | None, model: Any) -> list[str]:
    """Limit every BLAS library but torch's own to ``threads``; the library files limited.

    Nothing for ``threads`` None (the option's "leave numpy alone") or for a model
    that is not on the CPU: a GPU model leaves the cores free.
    """
    device = getattr(getattr(model, "device", None), "type", "cpu")
    if threads is None or device != "cpu":
        return []
    import torch
    from threadpoolctl import ThreadpoolController

    torch_dir = Path(torch.__file__).resolve().parent
    limited = []
    for library in ThreadpoolController().select(user_api="blas").lib_controllers:
        if torch_dir in Path(library.filepath).resolve().parents:
            continue  # a torch build that brings its own BLAS keeps its threads
        if library.num_threads > threads:
            library.set_num_threads(threads)
            limited.append(library.filepath)
    return limited
