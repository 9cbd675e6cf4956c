"""Every directory memlib reads or writes, with MEMLIB_* environment overrides.

Paths never depend on the working directory: papermill runs kernels from elsewhere, so a
relative MEMLIB_* path is taken relative to the repository root, wherever memlib runs.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memlib import DEFAULT_SCALE

ROOT = Path(__file__).resolve().parent.parent
# written in every folder memlib creates for its outputs, so that `memlib clean` removes a
# folder only when memlib made it (`memlib.kit.clean`)
MARKER = ".memlib-folder"


class NotWritableError(OSError):
    """A folder memlib must write to is read-only, full or not a folder; one line."""


def _env_dir(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    # relative to the repository, not to the working folder: a notebook's kernel works in
    # notebooks/, and would otherwise read and write another folder than `make` does
    return (ROOT / Path(value).expanduser()).resolve() if value else default


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


def kernels_dir() -> Path:
    """memlib's compiled kernels, built on this machine for this user: $MEMLIB_KERNELS, else
    ~/.cache/memlib-kernels. Never inside the results cache, so nothing that packs or shares
    the cache (a class kit) carries native code."""
    return _env_dir("MEMLIB_KERNELS", Path.home() / ".cache" / "memlib-kernels")


def figures_root() -> Path:
    """Root of generated figures and tables: $MEMLIB_FIGURES, else <repo>/figures."""
    return _env_dir("MEMLIB_FIGURES", ROOT / "figures")


def figures_dir(study: str, scale: str = DEFAULT_SCALE) -> Path:
    """figures/<study>/ for the default scale (committed), figures/<scale>/<study>/ otherwise."""
    root = figures_root()
    return root / study if scale == DEFAULT_SCALE else root / scale / study


def build_root() -> Path:
    """Everything memlib builds (executed notebooks, the book, the class kit): $MEMLIB_BUILD,
    else <repo>/build."""
    return _env_dir("MEMLIB_BUILD", ROOT / "build")


def build_dir(scale: str = DEFAULT_SCALE) -> Path:
    """Executed notebooks and each run's working folder: $MEMLIB_BUILD/<scale>, else
    <repo>/build/<scale>."""
    return build_root() / scale


def claims_report(scale: str = DEFAULT_SCALE) -> Path:
    root = figures_root()
    return (root if scale == DEFAULT_SCALE else root / scale) / "CLAIMS.md"


def require_writable(directory: Path, variable: str) -> None:
    """Raise NotWritableError unless a file can be created in `directory` (made if missing):
    checked before any work, so a read-only cache stops a run at once, not after hours."""
    directory = Path(directory)
    try:
        own_dir(directory)
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".memlib-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise NotWritableError(
            f"cannot write to {directory} ({err.strerror or err}); make it writable or set "
            f"{variable} to a writable folder") from None


def own_dir(directory: Path) -> Path:
    """Create `directory` and its missing parents, leaving memlib's MARKER in each folder made
    here (none in a folder that was already there); return it."""
    directory = Path(directory)
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    for made in missing:
        (made / MARKER).touch(exist_ok=True)
    return directory
