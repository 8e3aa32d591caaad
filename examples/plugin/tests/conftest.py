"""Run from a source checkout too: the package's src/ goes on the path when it is not installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("ragloom_paragraphs") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
