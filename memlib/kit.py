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
holding .git) or a folder above any of them; what it keeps it names.

A kit also carries `kit.json`: what its entries' keys depend on besides the code (the commit,
the Python and library versions, the platform, the CPU dispatch and its pins), its entries and
their size. `python -m memlib kit-check KIT` compares that record with this machine: a key
made with another torch, another platform or without the pins is found by no lookup here, so
the kit would load nothing and every notebook would compute from scratch."""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from memlib import DEFAULT_SCALE, SCALES, STUDIES, cache, paths, process, provenance, runs

KIT = "class-kit.tar.gz"
RECORD = "kit.json"  # first in the archive: what the kit was made with
LOADS = "kit_loads.json"  # beside a scale's published outputs: each notebook's measured load
LEFT_OUT = ("kernels", "checkpoints")  # folders of the cache a kit never carries
ARCHIVE = b"PK\x03\x04"  # how torch.save's archive, the payload of every entry, begins
GZIP = b"\x1f\x8b"


class KitError(RuntimeError):
    """Nothing to pack, or not a kit to check; the message says what to do."""


def machine() -> dict:
    """What a cache key depends on here besides the code and the settings: the commit, the
    Python minor version (code is fingerprinted by its bytecode), the computing libraries'
    versions, the platform, and the CPU dispatch with the pins in force."""
    cpu = process.dispatch_record()
    return {
        "commit": provenance.git_sha(),
        "python": ".".join(platform.python_version_tuple()[:2]),
        "libraries": {name: runs.library_version(name) for name in runs.COMPUTING_LIBRARIES},
        "platform": f"{sys.platform} {platform.machine()}",
        "dispatch": cpu["dispatch"],
        "pins": cpu["pins"] if cpu["dispatch"] == process.PINNED else {},
    }


def differences(kit: dict, here: dict) -> list[str]:
    """What differs between the machine a kit was made on (`kit`, its record) and `here`
    (`machine()`), each as "WHAT X in the kit, Y here"; empty when the kit will load."""
    found = []

    def differ(what: str, made, now) -> None:
        if made != now:
            found.append(f"{what} {made or 'none'} in the kit, {now or 'none'} here")

    # uncommitted edits (a notebook's, say) do not move a key; another commit's code may
    commits = [str(c).removesuffix("-dirty") for c in (kit.get("commit"), here["commit"])]
    if "unknown" not in commits:
        differ("commit", commits[0][:12], commits[1][:12])
    differ("Python", kit.get("python"), here["python"])
    made_with = kit.get("libraries", {})
    for name in sorted(set(made_with) | set(here["libraries"])):
        differ(name, made_with.get(name, "absent"), here["libraries"].get(name, "absent"))
    differ("platform", kit.get("platform"), here["platform"])
    differ("CPU dispatch", kit.get("dispatch"), here["dispatch"])
    if kit.get("dispatch") == here["dispatch"]:  # else the dispatch already says it
        pins = kit.get("pins", {})
        for name in sorted(set(pins) | set(here["pins"])):
            differ(f"CPU pin {name}", pins.get(name), here["pins"].get(name))
    return found


def record(files: list[Path]) -> dict:
    """The kit's `kit.json`: this machine's `machine()`, when, and the entries' count and size."""
    return {**machine(), "made": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "entries": len(files), "bytes": sum(f.stat().st_size for f in files)}


def read_record(kit: Path) -> dict:
    """The record inside the kit at `kit`; KitError when it is no kit or carries none."""
    if not kit.is_file():
        raise KitError(f"no kit {kit}; `make class-kit` writes build/{KIT}")
    try:
        with tarfile.open(kit, "r:gz") as tar:
            member = tar.extractfile(RECORD)
            return json.loads(member.read().decode("utf-8"))
    except KeyError:
        raise KitError(f"{kit} carries no {RECORD}: it was made by an older memlib; make it "
                       "again with `make class-kit`") from None
    except (tarfile.TarError, OSError, EOFError, UnicodeDecodeError, ValueError) as err:
        raise KitError(f"{kit} is not a class kit ({' '.join(str(err).split())})") from None


def check(kit: Path) -> tuple[bool, str]:
    """(whether the kit at `kit` will load here, one line saying so or naming what differs)."""
    made = read_record(kit)
    entries = made.get("entries", "?")
    size = f"{kit.stat().st_size / 2**20:.1f} MiB, {entries} entr{'y' if entries == 1 else 'ies'}"
    found = differences(made, machine())
    if not found:
        return True, (f"{kit.name} ({size}, made at {made.get('commit', 'unknown')[:12]}) "
                      "will load on this machine")
    return False, (f"{kit.name} ({size}) will load nothing here, every notebook would compute "
                   f"from scratch: {'; '.join(found)}")


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
            made = json.dumps(record(files), indent=2).encode()
            info = tarfile.TarInfo(RECORD)
            info.size, info.mode = len(made), 0o644
            tar.addfile(info, io.BytesIO(made))
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


def loads_file(scale: str = DEFAULT_SCALE) -> Path:
    """Where the measured kit loads of `scale` are published: figures/kit_loads.json
    (figures/<scale>/ at other scales), beside the notebooks' outputs the book reads."""
    root = paths.figures_root()
    return (root if scale == DEFAULT_SCALE else root / scale) / LOADS


def fresh_clone(repo: Path, into: Path) -> Path:
    """The files git tracks in `repo`, as they are in its working tree, copied into `into`: a
    clone of this checkout, with no results, no build and no virtual environment."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = repo / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def cache_entries(folder: Path) -> int:
    """How many packable cache entries `folder` holds."""
    return (sum(1 for p in folder.rglob("*.pt") if packable(p, folder))
            if folder.is_dir() else 0)


def measure_loads(kit: Path, scale: str, stems: list[str] | None = None) -> dict:
    """Unpack `kit` into a fresh clone of this checkout, as a student does, and run each
    notebook of `stems` (every notebook when None) there at `scale` with `python -m memlib
    notebook`, timing it whole (the interpreter, the kernel, the loads, the figures): each
    notebook's seconds and how many results it had to compute (0 when the kit held them all).
    Published as `loads_file(scale)` for the teachers' page; returns the record."""
    made = read_record(kit)
    stems = stems or list(STUDIES.values())
    loads, computed = {}, {}
    with tempfile.TemporaryDirectory(prefix="memlib-kit-load-") as work:
        clone = fresh_clone(paths.repo_root(), Path(work) / "clone")
        results = clone / "results"
        results.mkdir()
        with tarfile.open(kit, "r:gz") as tar:
            tar.extractall(results, filter="data")
        # the clone's own folders; the data, the kernels' folder and the rest as they are
        own = ("MEMLIB_CACHE", "MEMLIB_RESULTS", "MEMLIB_BUILD", "MEMLIB_FIGURES",
               "MEMLIB_COMPUTE_LEDGER")
        env = {k: v for k, v in os.environ.items() if k not in own}
        env.update(PYTHONPATH=str(clone), MEMLIB_RESULTS=str(results),
                   MEMLIB_BUILD=str(clone / "build"), MEMLIB_FIGURES=str(clone / "figures"))
        for stem in stems:
            before = cache_entries(results / "cache")
            start = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "memlib", "notebook",
                                   f"notebooks/{stem}.py", "--scale", scale], cwd=clone,
                                  env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise KitError(f"notebook {stem} failed to load from the kit: "
                               f"{done.stderr.strip().splitlines()[-1:]}")
            loads[stem] = round(time.monotonic() - start, 1)
            computed[stem] = cache_entries(results / "cache") - before
    measured = {"scale": scale, "kit": {k: made.get(k) for k in ("commit", "entries", "bytes")},
                "kit_bytes": kit.stat().st_size, "device": provenance.device(),
                "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "load_seconds": loads, "computed": computed}
    published = loads_file(scale)
    known = {}
    if published.is_file():  # measured before: other notebooks' loads stay
        try:
            known = json.loads(published.read_text(encoding="utf-8"))
        except ValueError:
            known = {}
    for field in ("load_seconds", "computed"):
        measured[field] = {**known.get(field, {}), **measured[field]}
    published.parent.mkdir(parents=True, exist_ok=True)
    process.atomic_write_bytes(published, (json.dumps(measured, indent=2) + "\n").encode())
    return measured
