"""`make class-kit` and `make clean` (`python -m memlib class-kit | clean`): the folders they
read and remove are memlib.paths's, so MEMLIB_CACHE, MEMLIB_RESULTS, MEMLIB_BUILD and
MEMLIB_FIGURES are honoured (spaces in them included) where a shell recipe would not.

A class kit holds the cache's entries and nothing that runs: only files whose content is a
cache entry (a torch archive followed by the digest of its bytes, `memlib.cache`), whatever
their names; no compiled kernel (`kernels/`, built per machine), no file with an execute bit,
no link, no checkpoint of a run in progress. The kit is written in a private folder and
renamed into place, so nothing planted at its temporary name is ever written through.

`clean` removes only what memlib made: a folder holding memlib's marker (`paths.MARKER`,
left in every folder memlib creates) or one at its default place in the checkout, and in any
other configured folder only the cache's entries, recognised by their content. It never
touches the working folder, the home folder, the file system's root, a repository (a folder
holding .git) or a folder above any of them; what it keeps it names."""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path

from memlib import SCALES, cache, paths

KIT = "class-kit.tar.gz"
LEFT_OUT = ("kernels", "checkpoints")  # folders of the cache a kit never carries
ARCHIVE = b"PK\x03\x04"  # how torch.save's archive, the payload of every entry, begins
GZIP = b"\x1f\x8b"


class KitError(RuntimeError):
    """Nothing to pack; the message says what to run first."""


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError:
        return False


def is_entry(path: Path) -> bool:
    """Whether `path` holds a cache entry by its content: a torch archive whose bytes match
    the digest after them (an ELF or a script named like an entry is not one)."""
    return _starts_with(path, ARCHIVE) and cache.intact(path)


def packable(path: Path, root: Path) -> bool:
    """Whether the cache's file `path` goes into a class kit: a plain, non-executable file
    outside the folders a kit leaves out whose content is a cache entry."""
    relative = path.relative_to(root)
    mode = path.lstat().st_mode
    return (stat.S_ISREG(mode) and not mode & 0o111 and relative.parts[0] not in LEFT_OUT
            and not path.name.startswith(".") and is_entry(path))


def class_kit() -> Path:
    """Pack the cache's entries as `cache/...` into $MEMLIB_BUILD/class-kit.tar.gz (written
    whole or not at all); return its path. KitError when the cache holds no entry."""
    root = paths.cache_dir()
    files = sorted(p for p in root.rglob("*") if packable(p, root)) if root.is_dir() else []
    if not files:
        raise KitError(f"no results in {root}; run `make figures` first")
    kit = paths.own_dir(paths.build_root()) / KIT
    private = Path(tempfile.mkdtemp(prefix=f".{KIT}.", dir=kit.parent))  # mode 0700, new
    try:
        partial = private / KIT
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle, tarfile.open(fileobj=handle, mode="w:gz") as tar:
            for path in files:
                tar.add(path, arcname=str(Path("cache") / path.relative_to(root)),
                        recursive=False)
        os.replace(partial, kit)  # replaces a link at `kit` itself, never its target
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return kit


def clean() -> tuple[list[Path], list[str]]:
    """Remove what memlib built and cached: the executed notebooks and working folders of every
    scale, the book, the class kit, the cache and the smoke-scale figures (the committed
    figures stay), each only as far as memlib made it (module docstring). Return the folders
    and files removed and one line for each folder kept, saying why."""
    build = paths.build_root()
    targets = [*(build / s for s in SCALES), build / "book", build / KIT, paths.cache_dir(),
               paths.figures_root() / "smoke"]
    removed, kept = [], []
    for target in targets:
        if not (target.exists() or target.is_symlink()):
            continue
        why = _protected(target)
        if why:
            kept.append(f"{target} ({why}; memlib never removes it)")
        elif target.is_symlink() or not target.is_dir():
            if target.is_symlink() or _starts_with(target, GZIP):
                target.unlink()
                removed.append(target)
            else:
                kept.append(f"{target} (not a class kit memlib wrote)")
        elif (target / paths.MARKER).is_file() or target in _defaults():
            shutil.rmtree(target)
            removed.append(target)
        else:
            kept.append(_remove_entries(target, removed))
    return removed, [k for k in kept if k]


def _defaults() -> set[Path]:
    """The folders clean removes, at their places in the checkout (memlib's alone)."""
    root = paths.repo_root()
    return {*(root / "build" / s for s in SCALES), root / "build" / "book",
            root / "results" / "cache", root / "figures" / "smoke"}


def _protected(target: Path) -> str:
    """Why `target` must never be removed, or "": the working folder, the home folder, the
    root, a repository, or a folder holding any of them."""
    target = target.resolve()
    for name, place in (("the working folder", Path.cwd()), ("the home folder", Path.home()),
                        ("the repository", paths.repo_root())):
        if target == place.resolve() or target in place.resolve().parents:
            return f"it is or holds {name}"
    if target == Path(target.anchor) or (target / ".git").exists():
        return "it is the file system's root or a repository"
    return ""


def _remove_entries(folder: Path, removed: list[Path]) -> str:
    """Remove the cache entries directly in `folder`, a folder memlib did not create; the
    line that says what stays ("" when nothing does)."""
    others = []
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.is_symlink() and is_entry(path):
            path.unlink()
            removed.append(path)
        else:
            others.append(path.name)
    if not others:
        return ""
    return (f"{folder} (memlib did not create it) and its {len(others)} other file(s), e.g. "
            f"{others[0]}")
