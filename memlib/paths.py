"""Every directory memlib reads or writes, with MEMLIB_* environment overrides.

Paths never depend on the working directory: papermill runs kernels from elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from memlib import DEFAULT_SCALE

ROOT = Path(__file__).resolve().parent.parent


def _env_dir(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    return Path(value).expanduser().resolve() if value else default


def repo_root() -> Path:
    return ROOT


def data_dir() -> Path:
    """Datasets: $MEMLIB_DATA, else <repo>/data."""
    return _env_dir("MEMLIB_DATA", ROOT / "data")


def results_dir() -> Path:
    """Raw results and checkpoints: $MEMLIB_RESULTS, else <repo>/results."""
    return _env_dir("MEMLIB_RESULTS", ROOT / "results")


def cache_dir() -> Path:
    """Compute-or-load cache: $MEMLIB_CACHE, else <results>/cache."""
    return _env_dir("MEMLIB_CACHE", results_dir() / "cache")


def figures_root() -> Path:
    """Root of generated figures and tables: $MEMLIB_FIGURES, else <repo>/figures."""
    return _env_dir("MEMLIB_FIGURES", ROOT / "figures")


def figures_dir(study: str, scale: str = DEFAULT_SCALE) -> Path:
    """figures/<study>/ for the default scale (committed), figures/<scale>/<study>/ otherwise."""
    root = figures_root()
    return root / study if scale == DEFAULT_SCALE else root / scale / study


def build_dir(scale: str = DEFAULT_SCALE) -> Path:
    """Executed notebooks and each run's working folder: $MEMLIB_BUILD/<scale>, else
    <repo>/build/<scale>."""
    return _env_dir("MEMLIB_BUILD", ROOT / "build") / scale


def claims_report(scale: str = DEFAULT_SCALE) -> Path:
    root = figures_root()
    return (root if scale == DEFAULT_SCALE else root / scale) / "CLAIMS.md"
