"""manifest.json: what produced a set of figures (parameters, code, versions, device, CPU and
its pinned instruction set, time)."""

from __future__ import annotations

import json
import platform
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from memlib import paths
from memlib.cache import ledger_seconds
from memlib.process import atomic_write_bytes, dispatch_record, workers

PACKAGES = ("memlib", "torch", "torchvision", "timm", "transformers", "numpy", "pandas",
            "scipy", "scikit-learn", "mlxtend", "matplotlib", "papermill", "jupytext")


def git_sha() -> str:
    """HEAD's SHA, with "-dirty" when tracked files other than the published outputs
    (figures/, which a run itself rewrites) differ from it; "unknown" outside git."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=paths.repo_root(), capture_output=True,
                              text=True, timeout=10)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode:
            return "unknown"
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                    ":(exclude)figures").stdout.strip()
        return head.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def device() -> str:
    import torch

    if torch.cuda.is_available():
        n = torch.cuda.device_count()
        return f"{n} x {torch.cuda.get_device_name(0)}"
    return f"cpu ({platform.machine()}, {torch.get_num_threads()} threads)"


def gpu() -> dict[str, Any]:
    """The GPU, CUDA and cuDNN a run used and the kernels it warned are non-deterministic:
    "none" for each where there is no GPU (and for the kernels where none warned)."""
    import torch

    from memlib.seed import nondeterministic_kernels

    warned = nondeterministic_kernels() or "none"
    if not torch.cuda.is_available():
        return {"name": "none", "cuda": "none", "cudnn": "none",
                "nondeterministic_kernels": warned}
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"name": torch.cuda.get_device_name(0), "cuda": torch.version.cuda or "none",
            "cudnn": str(cudnn) if cudnn else "none", "nondeterministic_kernels": warned}


def data_sources(names: list[str]) -> dict[str, str]:
    """For every dataset the run read (as its config resolved it): where its data comes from
    ("mnist-5k" is the bundled subset of MNIST, with its split)."""
    from memlib import data

    sources = {}
    for name in names:
        try:
            sources[name] = data.source(name)
        except Exception as err:  # a manifest records what it can; it never stops the run
            sources[name] = f"unknown ({type(err).__name__}: {err})"
    return sources


def compute_cost(ledger: Path | None) -> dict[str, Any]:
    """What the cache entries a run used cost to compute on a cold cache, summed from the
    seconds each entry stored when it was computed (so a run that only loaded them reports
    the same), each entry once, with those it used inside its own computation (a run and the
    probes computed from it: the run counts once); with the number of entries and of those
    that stored no time."""
    entries = ledger_seconds(ledger) if ledger is not None else {}
    timed = [s for s in entries.values() if s is not None]
    return {"compute_seconds": round(sum(timed), 1), "cache_entries": len(entries),
            "cache_entries_without_time": len(entries) - len(timed)}


# studies whose images are not standardized, and what they see instead
FIXED_INPUTS = {"04_task_complexity_probes": "[-1, 1] (2x - 1 of the [0, 1] pixels, background "
                                             "-1), as the paper's authors did"}


def input_scaling(study: str, parameters: dict[str, Any], names: list[str]) -> dict[str, str]:
    """For every dataset in `names`: how the study's images were scaled, with the
    training split's per-channel statistics where it standardizes them. The scaling is the
    `inputs` parameter (the lens: an `inputs=` item of study1_sets), else the study's own."""
    from memlib import data

    sets = dict(str(item).split("=", 1) for item in parameters.get("study1_sets") or []
                if "=" in str(item))
    scaling = parameters.get("inputs") or sets.get("inputs") or "standardized"
    out = {}
    for name in names:
        if study in FIXED_INPUTS or scaling == "unit":
            out[name] = FIXED_INPUTS.get(study, "[0, 1] pixels, not standardized")
            continue
        try:
            out[name] = data.standardization(name).describe()
        except Exception as err:  # a manifest records what it can; it never stops the run
            out[name] = f"unknown ({type(err).__name__}: {err})"
    return out


def workers_used(parameters: dict[str, Any]) -> int | str:
    """How many runs the notebook computed at once (`process.workers`): it decides the wall
    time, never a result, so it is recorded here and held by no cache key."""
    try:
        return workers(parameters.get("parallel_runs"))
    except (ValueError, TypeError) as err:  # a manifest records what it can
        return f"unknown ({err})"


def manifest(study: str, scale: str, parameters: dict[str, Any], wall_seconds: float,
             ledger: Path | None = None, data_used: list[str] = ()) -> dict:
    """`ledger`: the file in which the run noted the cache entries it loaded or computed;
    `data_used`: the datasets it read, as its config resolved them."""
    return {
        "study": study,
        "scale": scale,
        "parameters": parameters,
        "data": data_sources(list(data_used)),
        "inputs": input_scaling(study, parameters, list(data_used)),
        "git_sha": git_sha(),
        "versions": versions(),
        "device": device(),
        "gpu": gpu(),
        "cpu": dispatch_record(),
        "workers": workers_used(parameters),
        "wall_seconds": round(wall_seconds, 1),
        **compute_cost(ledger),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def write_manifest(directory: Path, record: dict) -> Path:
    path = Path(directory) / "manifest.json"
    atomic_write_bytes(path, (json.dumps(record, indent=2, default=str) + "\n").encode())
    return path
