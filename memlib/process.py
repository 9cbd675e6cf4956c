"""What every layer of memlib may need from the process it runs in: the pinned CPU instruction
set, one CPU thread, warnings given once, atomic file writes and the checkpoint files of the
cached computation in progress.

The bottom of memlib: it imports nothing of memlib, and nothing heavy (torch loads only
inside the functions that need it), so that memlib/__init__.py can pin the instruction set
before anything initialises torch.

Why the pin: torch's own kernels (ATen), its BLAS (MKL) and its convolutions (oneDNN) each
pick an instruction set at run time, and the pick changes the order of floating-point sums,
hence the bits of every result. Pinned to AVX2 (ATen, oneDNN) and to MKL's COMPATIBLE branch
(the only MKL branch that gives the same results on Intel and AMD processors), a seed gives
the same numbers on every x86-64 machine with AVX2. `MEMLIB_CPU_DISPATCH=native` lets the
libraries choose (faster on a CPU with AVX-512; full-scale GPU runs barely use the CPU).
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import tempfile
import warnings
from pathlib import Path

DISPATCH_VARIABLE = "MEMLIB_CPU_DISPATCH"
PINNED, NATIVE = "avx2", "native"
# read by the libraries when they first compute, so set before torch's first operation
PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}
PINNED_CAPABILITY = "AVX2"  # what torch.backends.cpu.get_cpu_capability() then reports
REQUIRED_FLAGS = ("avx2", "fma")  # what ATen's AVX2 kernels need

_UMASK = os.umask(0)
os.umask(_UMASK)
_WARNED: set[str] = set()
_COMPUTING: list[list] = []  # [entry path, training runs so far] of computations in progress
_dispatch: dict[str, str] = {}  # how this process's dispatch was decided: mode, reason


def cpu_flags(cpuinfo: str) -> set[str]:
    """The instruction-set flags of the first processor in /proc/cpuinfo's text."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return set(value.split())
    return set()


def cpu_model(cpuinfo: str) -> str:
    """The first processor's model name in /proc/cpuinfo's text, else the machine type."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "model name" and value.strip():
            return value.strip()
    return platform.processor() or platform.machine() or "unknown"


def read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:  # not Linux
        return ""


def dispatch_choice(requested: str | None, flags: set[str]) -> tuple[str, str]:
    """(mode, reason): PINNED unless the user asked for NATIVE or the CPU lacks AVX2.

    A CPU without AVX2 (or not x86-64) runs natively rather than refusing: memlib still works
    there, only its last digits may differ from those of the committed outputs, and the
    manifest says so. A value other than the two modes pins, the safe choice, with a warning.
    """
    requested = (requested or PINNED).strip().lower()
    if requested == NATIVE:
        return NATIVE, f"{DISPATCH_VARIABLE}=native: the libraries choose"
    missing = [f for f in REQUIRED_FLAGS if f not in flags]
    if missing:
        return NATIVE, (f"this CPU lacks {', '.join(missing)}: the libraries choose, and the "
                        "last digits may differ from those of runs pinned to AVX2")
    if requested != PINNED:
        return PINNED, (f"{DISPATCH_VARIABLE}={requested!r} is neither {PINNED!r} nor "
                        f"{NATIVE!r}; pinned to {PINNED}")
    return PINNED, f"pinned to {PINNED}, the same on every x86-64 CPU with AVX2"


def pin_cpu_dispatch() -> str:
    """Set the pins in os.environ (over whatever the caller set) unless dispatch is native;
    return the mode. Spawned workers and notebook kernels inherit the pins with the
    environment, and pin again when they import memlib."""
    requested = os.environ.get(DISPATCH_VARIABLE)
    mode, reason = dispatch_choice(requested, cpu_flags(read_cpuinfo()))
    _dispatch.update(mode=mode, reason=reason)
    if requested and requested.strip().lower() not in (PINNED, NATIVE):
        warn_once("dispatch", reason)
    if mode == PINNED:
        changed = any(os.environ.get(k) != v for k, v in PINS.items())
        os.environ.update(PINS)
        if changed and "torch" in sys.modules:
            _check_torch_took_the_pins()
    return mode


def _check_torch_took_the_pins() -> None:
    """torch reads the pins when it first computes, not when it is imported: a torch imported
    before memlib is fine unless it already computed with other settings."""
    import torch

    if torch.backends.cpu.get_cpu_capability() != PINNED_CAPABILITY:
        warn_once("dispatch", "torch computed before memlib was imported, with its own "
                  "instruction set; import memlib first (or start a fresh process) for "
                  "results that are the same on every machine")


def dispatch_record() -> dict:
    """For a manifest: the CPU, the dispatch mode and why, the pins in force and the
    instruction set torch reports it uses."""
    import torch

    cpuinfo = read_cpuinfo()
    return {
        "cpu": cpu_model(cpuinfo),
        "dispatch": _dispatch.get("mode"),
        "dispatch_reason": _dispatch.get("reason"),
        "pins": {k: os.environ.get(k) for k in PINS},
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def cache_key_tag() -> str:
    """What a cache key adds for pinned dispatch: results computed with the libraries' own
    choice (entries from before the pin, or under MEMLIB_CPU_DISPATCH=native) have other
    bits, so they must not be served to a pinned run, nor the other way round."""
    return f"|cpu={PINNED}" if _dispatch.get("mode") == PINNED else ""


def one_cpu_thread() -> None:
    """Below full scale memlib computes on one CPU thread: the models are small, two threads on
    two shared cores ran several times slower than one (waiting for each other), and the
    results then do not depend on the machine's core count (the order of floating-point sums
    is the same everywhere), so a fresh clone elsewhere reproduces them bit for bit."""
    import torch

    torch.set_num_threads(1)


def warn_once(topic: str, message: str) -> None:
    """A RuntimeWarning the first time `topic` comes up in this process, then silence."""
    if topic not in _WARNED:
        _WARNED.add(topic)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file and a rename: readers see the old file
    or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; outputs are for everyone to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def checkpoint_dir(entry: Path) -> Path:
    """Where the training runs inside the computation of cache entry `entry` checkpoint."""
    return Path(entry).parent / "checkpoints"


def checkpoints_of(entry: Path) -> list[Path]:
    return sorted(checkpoint_dir(entry).glob(f"{Path(entry).stem}.*.ckpt"))


@contextlib.contextmanager
def computing(entry: Path):
    """Marks the computation of cache entry `entry` as in progress for next_checkpoint."""
    _COMPUTING.append([Path(entry), 0])
    try:
        yield
    finally:
        _COMPUTING.pop()


def next_checkpoint() -> Path | None:
    """The checkpoint file of the next training run inside the cached computation in
    progress (runs are numbered in the order the computation starts them), or None."""
    if not _COMPUTING:
        return None
    entry = _COMPUTING[-1]
    entry[1] += 1
    return checkpoint_dir(entry[0]) / f"{entry[0].stem}.{entry[1]}.ckpt"
