"""`make class-kit` and `make clean` (`python -m memlib class-kit | clean`): the folders they
read and remove are memlib.paths's, so MEMLIB_CACHE, MEMLIB_RESULTS, MEMLIB_BUILD and
MEMLIB_FIGURES are honoured (spaces in them included) where a shell recipe would not.

A class kit holds the cache's entries and nothing that runs: no compiled kernel (`kernels/`,
built per machine), no file with an execute bit, no shared library, no link, no checkpoint of
a run in progress."""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
from pathlib import Path

from memlib import SCALES, paths

KIT = "class-kit.tar.gz"
LEFT_OUT = ("kernels", "checkpoints")  # folders of the cache a kit never carries


class KitError(RuntimeError):
    """Nothing to pack; the message says what to run first."""


def packable(path: Path, cache: Path) -> bool:
    """Whether the cache's file `path` goes into a class kit: a plain, non-executable file,
    not a shared library, outside the folders a kit leaves out."""
    relative = path.relative_to(cache)
    mode = path.lstat().st_mode
    return (stat.S_ISREG(mode) and not mode & 0o111 and path.suffix != ".so"
            and relative.parts[0] not in LEFT_OUT and not path.name.startswith("."))


def class_kit() -> Path:
    """Pack the cache's entries as `cache/...` into $MEMLIB_BUILD/class-kit.tar.gz (written
    whole or not at all); return its path. KitError when the cache holds no entry."""
    cache = paths.cache_dir()
    files = sorted(p for p in cache.rglob("*") if packable(p, cache)) if cache.is_dir() else []
    if not files:
        raise KitError(f"no results in {cache}; run `make figures` first")
    kit = paths.build_root() / KIT
    kit.parent.mkdir(parents=True, exist_ok=True)
    partial = kit.with_name(f".{KIT}.tmp")
    try:
        with tarfile.open(partial, "w:gz") as tar:
            for path in files:
                tar.add(path, arcname=str(Path("cache") / path.relative_to(cache)),
                        recursive=False)
        os.replace(partial, kit)
    finally:
        partial.unlink(missing_ok=True)
    return kit


def clean() -> list[Path]:
    """Remove what memlib built and cached: the executed notebooks and working folders of every
    scale, the book, the class kit, the cache and the smoke-scale figures (the committed
    figures stay). Return the folders and files removed."""
    build = paths.build_root()
    targets = [*(build / s for s in SCALES), build / "book", build / KIT, paths.cache_dir(),
               paths.figures_root() / "smoke"]
    removed = [t for t in targets if t.exists() or t.is_symlink()]
    for target in removed:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    return removed
