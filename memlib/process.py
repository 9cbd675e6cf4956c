"""What every layer of memlib may need from the process it runs in: the pinned CPU instruction
set, one CPU thread, warnings given once, atomic file writes and the checkpoint files of the
cached computation in progress.

The bottom of memlib: it imports nothing of memlib, and nothing heavy (torch loads only
inside the functions that need it), so that memlib/__init__.py can pin the instruction set
before anything initialises torch.

Why the pin: torch's own kernels (ATen), its BLAS (MKL) and its convolutions (oneDNN) each
pick an instruction set at run time, and so do numpy's loops and its BLAS (OpenBLAS); each
pick changes the order of floating-point sums or the rounding of exp and log, hence the bits
of results. Pinned to AVX2 (ATen, oneDNN, OpenBLAS, numpy) and to MKL's COMPATIBLE branch
(the only MKL branch that gives the same results on Intel and AMD processors), a seed gives
the same numbers on every x86-64 machine with AVX2; memlib's own compiled kernel is built
for the same target. `MEMLIB_CPU_DISPATCH=native` lets the
libraries choose (faster on a CPU with AVX-512; full-scale GPU runs barely use the CPU).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import platform
import sys
import tempfile
import warnings
from pathlib import Path

DISPATCH_VARIABLE = "MEMLIB_CPU_DISPATCH"
PINNED, NATIVE = "avx2", "native"
# torch reads its three when it first computes, numpy and OpenBLAS theirs when imported
PINS = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own kernels
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # torch's convolutions
    "MKL_CBWR": "COMPATIBLE",  # torch's BLAS and LAPACK
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's and scipy's BLAS and LAPACK: AVX2 kernels
    # numpy's own loops (exp, log, ...): no AVX-512 (numpy 1.x and 2.x names of it)
    "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX "
                                "AVX512_CNL AVX512_ICL AVX512_SPR X86_V4",
}
PINNED_CAPABILITY = "AVX2"  # what torch.backends.cpu.get_cpu_capability() then reports
INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"
PINNED_INDUCTOR_FOLDER = "memlib-avx2"
REQUIRED_FLAGS = ("avx2", "fma")  # what ATen's AVX2 kernels need

_UMASK = os.umask(0)
os.umask(_UMASK)
_WARNED: set[str] = set()
_HELD: list[list[tuple[str, str]]] = []  # warn_once's held warnings, innermost block last
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
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
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
    first = not _dispatch  # later calls (the runner's, before a kernel) find them loaded
    _dispatch.update(mode=mode, reason=reason)
    if requested and requested.strip().lower() not in (PINNED, NATIVE):
        # given as memlib is imported, before its command line can set the one-line form
        shown = warnings.formatwarning
        warnings.formatwarning = one_line_warning
        try:
            warn_once("dispatch", reason)
        finally:
            warnings.formatwarning = shown
    if mode == PINNED:
        changed = any(os.environ.get(k) != v for k, v in PINS.items())
        os.environ.update(PINS)
        os.environ[INDUCTOR_CACHE] = pinned_inductor_cache(os.environ.get(INDUCTOR_CACHE))
        if first and changed and "numpy" in sys.modules:  # importing torch imports numpy
            warn_once("dispatch", f"{_too_late()}; import memlib first for results that are "
                      "the same on every machine")
    return mode


CUDA_DETERMINISM = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}  # cuBLAS's deterministic workspace


def cuda_determinism_env() -> None:
    """What CUDA reads from the environment for same-seed-same-bits runs, set unless the
    caller set it: cuBLAS reads it once, when CUDA first initialises, so it is set on
    importing memlib (inherited by workers and notebook kernels)."""
    for key, value in CUDA_DETERMINISM.items():
        os.environ.setdefault(key, value)


def pinned_inductor_cache(current: str | None) -> str:
    """torch.compile's kernel cache for pinned processes, apart from the usual one
    (`current`, else torch's default): its cache keys leave out ATen's instruction set, and a
    kernel compiled under another one computes garbage (gradients of 1e23, measured) or
    crashes the process."""
    if current is None:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = f"uid_{os.getuid()}"
        current = os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")
    if Path(current).name == PINNED_INDUCTOR_FOLDER:  # inherited from a pinned parent
        return current
    return os.path.join(current, PINNED_INDUCTOR_FOLDER)


def _too_late() -> str:
    """Which libraries took their instruction set before memlib's pins: numpy when it is
    imported, torch only when it first computes (its capability then is not the pinned one)."""
    if "torch" in sys.modules:
        import torch

        if torch.backends.cpu.get_cpu_capability() != PINNED_CAPABILITY:
            return "numpy and torch ran before memlib and keep the instruction sets they chose"
    return "numpy was imported before memlib and keeps the instruction set it chose"


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


def compiler_target_flags() -> list[str]:
    """The C compiler's target for memlib's own compiled kernels. Pinned: x86-64-v3 (AVX2,
    FMA) with generic tuning, so that a vectorised sum adds in the same order on every
    machine (-march=native on an AVX-512 CPU gave other bits); else the machine's own."""
    if _dispatch.get("mode") == PINNED:
        return ["-march=x86-64-v3", "-mtune=generic"]
    return ["-march=native"]


def one_cpu_thread() -> None:
    """Below full scale memlib computes on one CPU thread: the models are small, two threads on
    two shared cores ran several times slower than one (waiting for each other), and the
    results then do not depend on the machine's core count (the order of floating-point sums
    is the same everywhere), so a fresh clone elsewhere reproduces them bit for bit."""
    import torch

    torch.set_num_threads(1)


WORKERS_VARIABLE = "MEMLIB_WORKERS"
MAX_WORKERS = 256  # as the studies' `parallel_runs` allows


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a Slurm job's or a container's
    share, not the machine's count), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def parse_workers(text: str, source: str) -> int:
    """A number of runs at once, 1 to MAX_WORKERS, from `text`; ValueError in one line naming
    `source` (the option or variable it came from) otherwise."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WORKERS:
        raise ValueError(f"{source} must be a whole number of runs at once from 1 to "
                         f"{MAX_WORKERS}, got {text!r}")
    return value


def workers(setting: int | None) -> int:
    """How many runs compute at once: MEMLIB_WORKERS where set (`memlib run/notebook
    --workers` sets it), else a study's `parallel_runs` setting where it names one, else the
    cores this process may use. Each run computes on one thread, and its bits are the same
    whichever process computes it, so this decides how long a run of runs takes, never what
    it computes: no cache key holds it."""
    variable = os.environ.get(WORKERS_VARIABLE)
    if variable is not None and variable.strip():
        return parse_workers(variable, WORKERS_VARIABLE)
    return usable_cores() if setting is None else int(setting)


def one_line_warning(message, category, filename, lineno, line=None) -> str:
    """memlib's form of a warning (warnings.formatwarning): one line, without the source line
    Python adds."""
    return f"memlib: warning: {message}\n"


def warn_once(topic: str, message: str) -> None:
    """A RuntimeWarning the first time `topic` comes up in this process, then silence; inside
    `holding_warnings` the (topic, message) is held instead, for another process to give."""
    if topic not in _WARNED:
        _WARNED.add(topic)
        if _HELD:
            _HELD[-1].append((topic, message))
        else:
            warnings.warn(message, RuntimeWarning, stacklevel=3)


@contextlib.contextmanager
def holding_warnings():
    """Yield the list of the (topic, message) pairs that `warn_once` holds in the block: a
    worker process hands them to its parent, whose own `warn_once` then says each topic once
    for all its workers, in the parent's form (one line under the command line)."""
    held: list[tuple[str, str]] = []
    _HELD.append(held)
    try:
        yield held
    finally:
        _HELD.pop()


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
