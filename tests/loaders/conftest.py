"""Fixtures of the loader tests: the checked-in sample files and a PDF writer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    """A private copy of tests/loaders/fixtures."""
    target = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, target)
    return target
