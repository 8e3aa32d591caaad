"""Fixtures of the sentence-transformers plugin's tests: numpy's BLAS thread count, set and restored."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from threadpoolctl import ThreadpoolController

NUMPY_LIBS = str(Path(np.__file__).resolve().parent.parent / "numpy.libs")


def _numpy_blas_threads() -> int:
    (library,) = [lib for lib in ThreadpoolController().select(user_api="blas").lib_controllers if lib.filepath.startswith(NUMPY_LIBS)]
    return int(library.num_threads)


@pytest.fixture
def numpy_blas_threads() -> Callable[[], int]:
    """Reads the thread count of the BLAS library numpy itself loaded."""
    return _numpy_blas_threads


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """numpy's BLAS at 2 threads for the test (whatever the machine's default); every count restored afterwards."""
    controller = ThreadpoolController().select(user_api="blas")
    before = [(lib, lib.num_threads) for lib in controller.lib_controllers]
    torch_threads = torch.get_num_threads()
    for lib, _ in before:
        lib.set_num_threads(2)
    yield
    for lib, threads in before:
        lib.set_num_threads(threads)
    torch.set_num_threads(torch_threads)
