"""Execute a percent-format notebook headlessly with papermill, all or nothing.

jupytext `.py` -> temporary `.ipynb` (kernel python3) -> papermill with the scale's
parameters -> on success the executed notebook lands in build/<scale>/ and the
figures it wrote (into a staging directory) replace figures/<study>/ together with a
manifest.json. A failing cell leaves the previous outputs untouched.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from memlib import SCALES, STUDIES, paths


class NotebookError(RuntimeError):
    """A notebook failed; the message is one line pointing at the failed cell."""


def params_file(notebook: Path, scale: str) -> Path:
    return paths.repo_root() / "params" / scale / f"{Path(notebook).stem}.yaml"


def read_params(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise NotebookError(f"no parameter file {path}; create it or pick another scale")
    try:
        params = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise NotebookError(f"{path} is not valid YAML: {err}".replace("\n", " ")) from None
    if not isinstance(params, dict):
        raise NotebookError(f"{path} must hold a mapping of parameter names to values")
    return params


def run_notebook(notebook: Path, scale: str, *, params: dict[str, Any] | None = None,
                 build_dir: Path | None = None) -> Path:
    """Execute `notebook` at `scale`; return the executed notebook's path."""
    import jupytext
    import papermill

    from memlib.provenance import manifest, write_manifest
    from memlib.train import show_progress

    if scale not in SCALES:
        raise NotebookError(f"unknown scale {scale!r}; choose one of: {', '.join(SCALES)}")
    notebook = Path(notebook).resolve()
    if not notebook.exists():
        raise NotebookError(f"notebook {notebook} does not exist")
    study = notebook.stem
    if params is None:
        params = read_params(params_file(notebook, scale))
    params = {**params, "scale": scale}
    build_dir = Path(build_dir or paths.repo_root() / "build" / scale)
    build_dir.mkdir(parents=True, exist_ok=True)
    source = build_dir / f".{study}.input.ipynb"
    executed = build_dir / f".{study}.output.ipynb"
    staging = build_dir / f".{study}.figures"
    shutil.rmtree(staging, ignore_errors=True)

    nb = jupytext.read(notebook)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    jupytext.write(nb, source, fmt="ipynb")

    progress_bar = show_progress()  # decided before the kernel's environment is quietened
    saved_env = {k: os.environ.get(k) for k in ("MEMLIB_FIGURES", "MEMLIB_PROGRESS")}
    os.environ["MEMLIB_FIGURES"] = str(staging)
    os.environ["MEMLIB_PROGRESS"] = "0"  # the kernel inherits this: no bars in saved outputs
    start = time.time()
    try:
        papermill.execute_notebook(
            str(source), str(executed), parameters=params, kernel_name="python3",
            cwd=str(notebook.parent), progress_bar=progress_bar,
            log_output=False,
        )
    except papermill.PapermillExecutionError as err:
        failed = build_dir / f"{study}.failed.ipynb"
        os.replace(executed, failed)
        shutil.rmtree(staging, ignore_errors=True)
        raise NotebookError(
            f"{notebook.name} failed in cell {err.exec_count}: {err.ename}: {err.evalue} "
            f"(see {failed})"
        ) from None
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        source.unlink(missing_ok=True)

    staged = staging / paths.figures_dir(study, scale).relative_to(paths.figures_root())
    target = paths.figures_dir(study, scale)
    staged.mkdir(parents=True, exist_ok=True)
    write_manifest(staged, manifest(study, scale, params, time.time() - start))
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(staged), str(target))
    shutil.rmtree(staging, ignore_errors=True)
    (build_dir / f"{study}.failed.ipynb").unlink(missing_ok=True)
    final = build_dir / f"{study}.ipynb"
    os.replace(executed, final)
    return final



def preset_config(study: str, scale: str):
    """The study's Config as its parameter file for `scale` sets it."""
    from memlib.config import build

    module = importlib.import_module(f"memlib.{study}")
    return build(module.Config, read_params(params_file(Path(STUDIES[study]), scale)))


def run_command(study: str, config, scale: str) -> str:
    """The shell command that computes `config`'s results outside a notebook: the preset plus
    a `--set` for every value that differs from it."""
    from memlib.config import to_dict

    preset = to_dict(preset_config(study, scale))
    sets = [f"--set {shlex.quote(f'{k}={json.dumps(v) if isinstance(v, list) else v}')}"
            for k, v in to_dict(config).items() if preset.get(k) != v]
    launcher = "torchrun --standalone --nproc_per_node=<GPUs>" if scale == "full" else "python"
    return " ".join([launcher, "-m memlib run", study, "--scale", scale, *sets])


def one_cpu_thread() -> None:
    """Below full scale memlib computes on one CPU thread: the models are small, two threads on
    two shared cores ran several times slower than one (waiting for each other), and the
    results then do not depend on the machine's core count (the order of floating-point sums
    is the same everywhere), so a fresh clone elsewhere reproduces them bit for bit."""
    import torch

    torch.set_num_threads(1)


def study_results(study: str, config, scale: str) -> dict:
    """What a notebook calls for its results: `memlib.<study>.run(config)`.

    At full scale the training belongs to `memlib run` (on one GPU or several under
    torchrun), not to the notebook's kernel: the notebook reads the cache that run filled
    and, where an entry is missing, stops with one line naming the command to run.
    """
    from memlib.cache import only_cached

    run = importlib.import_module(f"memlib.{study}").run
    if scale != "full":
        one_cpu_thread()
        return run(config)
    with only_cached(run_command(study, config, scale)):
        return run(config)
