"""The machine a benchmark ran on: CPU model, cores, BLAS, load, date — stored with every result file."""

from __future__ import annotations

import os
import platform
import time
from typing import Any


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas() -> str:
    try:
        import numpy as np

        config = np.show_config(mode="dicts")  # numpy >= 1.25
        info = config.get("Build Dependencies", {}).get("blas", {})
        return f"{info.get('name', '?')} {info.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - only a label
        return "unknown"


def memory_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(memory_gib(), 1),
        "blas": blas(),
        "python": platform.python_version(),
        "load_average": [round(x, 1) for x in load],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
