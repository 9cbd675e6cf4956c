"""Execute a percent-format notebook headlessly with papermill, all or nothing.

jupytext `.py` -> temporary `.ipynb` (kernel python3) -> papermill with the scale's
parameters -> on success the executed notebook lands in build/<scale>/ and the
figures it wrote (into a staging folder beside figures/<study>/, on its file system, so
that publishing is renames and never a copy) replace figures/<study>/ together with a
manifest.json and a copy of the executed notebook. A failing cell or a full disk leaves the
previous outputs untouched.

Runs of the same notebook may overlap (`make -j`, two terminals, a notebook server beside
`make figures`): each run works in a folder of its own under build/<scale>/, and publishing
is one locked swap of whole folders, so the last run to finish wins with its complete set
of outputs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shlex
import shutil
import signal
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from memlib import DEFAULT_SCALE, SCALES, STUDIES, STUDY_OF, paths
from memlib.config import ConfigError
from memlib.presets import PresetError, params_file, read_params
from memlib.process import one_cpu_thread, pin_cpu_dispatch
from memlib.studies import data_used, preset_config, settings


class NotebookError(RuntimeError):
    """A notebook failed; the message is one line pointing at the failed cell."""


class NotebookInputError(NotebookError):
    """A notebook or parameter file that cannot be run as given (bad input); one line."""


def run_notebook(notebook: Path, scale: str, *, params: dict[str, Any] | None = None,
                 build_dir: Path | None = None) -> Path:
    """Execute `notebook` at `scale`; return the executed notebook's path."""
    if scale not in SCALES:
        raise NotebookError(f"unknown scale {scale!r}; choose one of: {', '.join(SCALES)}")
    notebook = Path(notebook).resolve()
    if not notebook.is_file():
        raise NotebookError(f"no such notebook {notebook}")
    nb = _read_notebook(notebook)
    if params is None:
        try:
            params = read_params(params_file(notebook, scale))
        except PresetError as err:
            raise NotebookError(str(err)) from None
    study = STUDY_OF.get(notebook.stem)
    if study is not None:  # every setting, so the notebook and its manifest show them all
        try:
            params = {**params, **settings(study, params)}
        except ConfigError as err:
            raise NotebookInputError(str(err)) from None
    build_dir = Path(build_dir or paths.build_dir(scale))
    paths.own_dir(build_dir)
    target = paths.figures_dir(notebook.stem, scale)
    paths.own_dir(target.parent)
    with (_own_folder(build_dir, notebook.stem) as work,
          # beside its target, on its file system: publishing is renames, never a copy
          _own_folder(target.parent, target.name) as staging,
          # short, for the kernel's Unix sockets
          _own_folder(Path(tempfile.gettempdir()), "memlib-kernel") as sockets):
        return _execute(notebook, nb, scale, {**params, "scale": scale}, build_dir, work,
                        staging, sockets)


def _read_notebook(notebook: Path):
    """The notebook, refused unless a cell is tagged `parameters`: without one papermill
    would run the notebook with its own values, ignoring the scale's preset and --set."""
    import jupytext

    nb = jupytext.read(notebook)
    if not any("parameters" in cell.metadata.get("tags", ()) for cell in nb.cells):
        raise NotebookInputError(f"{notebook.name} has no cell tagged parameters, so its "
                                 "parameters cannot be set; tag the cell that holds them "
                                 "(# %% tags=[\"parameters\"])")
    return nb


@contextlib.contextmanager
def _own_folder(parent: Path, stem: str):
    """A new folder `.<stem>.*.run` in `parent` of this run's own, locked while it lives and
    removed after; the folders of killed runs (no longer locked) are removed first."""
    for old in parent.glob(f".{stem}.*.run"):
        with contextlib.suppress(OSError):
            fd = os.open(old, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails while its run lives
                shutil.rmtree(old, ignore_errors=True)
            finally:
                os.close(fd)
    new = Path(tempfile.mkdtemp(prefix=f".{stem}.", suffix=".new", dir=parent))
    own = new.with_suffix(".run")  # only locked folders carry the name others clean up
    fd = os.open(new, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(new, own)
        yield own
    finally:
        shutil.rmtree(own, ignore_errors=True)
        shutil.rmtree(new, ignore_errors=True)  # if the rename did not happen
        os.close(fd)  # releases the lock


def _execute(notebook: Path, nb, scale: str, params: dict[str, Any], build_dir: Path,
             work: Path, staging: Path, sockets: Path) -> Path:
    import jupytext
    import papermill
    from nbclient.exceptions import DeadKernelError

    from memlib.cache import LEDGER_VARIABLE
    from memlib.provenance import manifest, write_manifest
    from memlib.train import show_progress

    study = notebook.stem
    source, executed = work / "input.ipynb", work / "output.ipynb"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    jupytext.write(nb, source, fmt="ipynb")

    # decided before the kernel's environment is quietened; named, since `make figures` runs
    # two notebooks at a time and their bars share the terminal
    progress_bar = {"desc": study} if show_progress() else False
    saved_env = {k: os.environ.get(k) for k in ("MEMLIB_FIGURES", "MEMLIB_PROGRESS",
                                                 LEDGER_VARIABLE, RUN_BY_PIPELINE,
                                                 "PYTHONPATH")}
    os.environ["MEMLIB_FIGURES"] = str(staging)
    # the kernel's notebook_config reads every setting given, and checks that it imports
    # memlib from this checkout, whose code the manifest names
    os.environ[RUN_BY_PIPELINE] = str(paths.repo_root())
    # ... which it does even where the environment's memlib is another checkout's (an
    # editable install elsewhere): this checkout comes first on the kernel's path
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(paths.repo_root()), *filter(None, [saved_env["PYTHONPATH"]])])
    os.environ[LEDGER_VARIABLE] = str(work / "compute.jsonl")  # the cache entries it used
    os.environ["MEMLIB_PROGRESS"] = "0"  # the kernel inherits this: no bars in saved outputs
    pin_cpu_dispatch()  # whatever changed os.environ since: the kernel inherits the pins
    _quiet_reported_failures()
    start = time.time()
    try:
        with open(work / "kernel.log", "w", encoding="utf-8") as log:
            papermill.execute_notebook(
                str(source), str(executed), parameters=params, kernel_name="python3",
                cwd=str(notebook.parent), progress_bar=progress_bar,
                log_output=False, kernel_manager_class=_kernel_manager(sockets, log),
            )
    except DeadKernelError:
        kept = build_dir / f"{study}.kernel.log"
        shutil.copyfile(work / "kernel.log", kept)
        raise NotebookError(f"the kernel running {notebook.name} died (out of memory?); "
                            f"its log is {kept}") from None
    except papermill.PapermillExecutionError as err:
        if err.ename == "KeyboardInterrupt":  # Ctrl-C reached the kernel too
            raise KeyboardInterrupt from None
        failed = build_dir / f"{study}.failed.ipynb"
        with folder_lock(build_dir):
            os.replace(executed, failed)
        raise NotebookError(
            f"{notebook.name} failed in cell {err.exec_count}: {err.ename}: "
            f"{' '.join(str(err.evalue).split())} "
            f"(see {failed})"
        ) from None
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    target = paths.figures_dir(study, scale)
    staged = staging / target.relative_to(paths.figures_root())
    if not staged.is_dir():
        raise NotebookError(f"{notebook.name} ran but saved no figure or table (nothing in "
                            f"{staged}); the published outputs were left as they were")
    final = build_dir / f"{study}.ipynb"
    try:
        write_manifest(staged, manifest(study, scale, params, time.time() - start,
                                        work / "compute.jsonl", _data_used(study, params)))
        # published beside its figures, outputs included, so a code host renders it and the
        # book is built from it without executing anything
        _publish_notebook(executed, staged / f"{study}.ipynb", notebook.name)
        with folder_lock(build_dir):
            swap_in(staged, target)
            (build_dir / f"{study}.failed.ipynb").unlink(missing_ok=True)
            os.replace(executed, final)
    except OSError as err:  # a full disk
        raise NotebookError(f"could not publish the outputs of {notebook.name}: "
                            f"{(err.strerror or str(err)).lower()}; the published outputs were "
                            "left as they were") from None
    for message in kernel_warnings(final):  # said here too, not only inside the notebook
        warnings.warn(f"{notebook.name}: {message}", RuntimeWarning, stacklevel=2)
    return final


_WARNING_LINE = re.compile(r"^(?:memlib: warning: |.*?:\d+: \w*Warning: )(?P<message>.+)$")


def kernel_warnings(executed: Path) -> list[str]:
    """The warnings an executed notebook's cells gave (its stderr outputs), each once, in
    order: a result that could not be written to the cache (a full disk), a checkpoint or an
    entry discarded, ... They are in the published notebook, and the command that ran it
    says them too."""
    try:
        cells = json.loads(Path(executed).read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return []
    found: dict[str, None] = {}
    for cell in cells:
        for output in cell.get("outputs", ()):
            if output.get("output_type") != "stream" or output.get("name") != "stderr":
                continue
            text = output.get("text", "")
            for line in ("".join(text) if isinstance(text, list) else text).splitlines():
                match = _WARNING_LINE.match(line.strip())
                if match:
                    found[match["message"].strip()] = None
    return list(found)


def _data_used(notebook: str, params: dict[str, Any]) -> list[str]:
    """The datasets the notebook's study read with `params`, as its config resolved them
    (none for a notebook that is not one of the studies)."""
    study = STUDY_OF.get(notebook)
    return data_used(study, params) if study else []


def relative_papermill_paths(executed: dict, source: str, output: str) -> dict:
    """`executed` (nbformat JSON) with papermill's input and output paths, which name this
    machine's private run folder, replaced by the file names `source` and `output`."""
    meta = executed.get("metadata", {}).get("papermill")
    if meta is None:
        return executed
    papermill = {**meta, "input_path": source, "output_path": output}
    return {**executed, "metadata": {**executed["metadata"], "papermill": papermill}}


def _publish_notebook(executed: Path, target: Path, source: str) -> None:
    """Write the executed notebook to `target` with relative paths only."""
    notebook = relative_papermill_paths(json.loads(executed.read_text(encoding="utf-8")), source,
                                        target.name)
    target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n",
                      encoding="utf-8")


@contextlib.contextmanager
def folder_lock(folder: Path):
    """One process at a time swaps outputs into `folder`: an exclusive lock on the folder
    itself (no lock file to leave behind). The book's build takes the same lock."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def swap_in(staged: Path, target: Path) -> None:
    """Replace the folder `target` by `staged`, which lies beside it (same file system), by
    renames alone; a failed rename puts the old folder back. Call it holding `folder_lock`
    on the folder around `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for leftover in target.parent.glob(f".{target.name}.*.publish"):  # of a killed run
        if not target.exists() and (leftover / "old").is_dir():
            os.rename(leftover / "old", target)
        shutil.rmtree(leftover, ignore_errors=True)
    swap = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".publish",
                                 dir=target.parent))
    # a Ctrl-C between the two renames would lose the old folder: it waits until they are done
    with interrupts_held():
        try:
            if target.exists():
                os.rename(target, swap / "old")
            try:
                os.rename(staged, target)
            except OSError:
                if (swap / "old").is_dir():
                    os.rename(swap / "old", target)
                raise
        finally:
            shutil.rmtree(swap, ignore_errors=True)


@contextlib.contextmanager
def interrupts_held():
    """A Ctrl-C inside the block is raised when the block is done. Python runs signal
    handlers in the main thread only, so elsewhere there is nothing to hold."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *_: caught.append(True))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _kernel_manager(sockets: Path, log):
    """A kernel manager whose kernel listens on Unix sockets in the private folder `sockets`,
    not on TCP ports (nothing on the network to eavesdrop on, no clash between overlapping
    runs, no "Kernel is running over TCP without encryption" warning on every run), and
    whose own stdout and stderr, the kernel's log rather than the cells' outputs, go to the
    file `log` instead of the terminal."""
    from jupyter_client import AsyncKernelManager
    from traitlets import default

    class Manager(AsyncKernelManager):
        @default("transport")
        def _default_transport(self):
            return "ipc"

        @default("ip")
        def _default_ip(self):
            return str(sockets / "kernel")

        @default("connection_file")  # with its key, removed with the folder, come what may
        def _default_connection_file(self):
            return str(sockets / "kernel.json")

        async def start_kernel(self, **kwargs):
            return await super().start_kernel(**{"stdout": log, "stderr": log, **kwargs})

    return Manager


class _ReportedInOneLine(logging.Filter):
    """run_notebook reports a dead kernel and a failed cell itself in one line (Ctrl-C
    included): drop the multi-line echoes papermill and asyncio would print of them, e.g.
    asyncio's "Task exception was never retrieved" for a cell that a Ctrl-C interrupted."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        return not ("Kernel died" in text or "DeadKernelError" in text
                    or type(error).__name__ in ("DeadKernelError", "CellExecutionError"))


class _InjectedAnyway(logging.Filter):
    """papermill warns, one line per parameter, of every parameter that the notebook's
    parameters cell does not name, yet injects it all the same; memlib checked each one against
    the study's config before the kernel started: drop those lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Passed unknown parameter")


def _quiet_reported_failures() -> None:
    for name, quiet in (("papermill", _ReportedInOneLine), ("papermill", _InjectedAnyway),
                        ("asyncio", _ReportedInOneLine)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, quiet) for f in logger.filters):
            logger.addFilter(quiet())


# ---- a notebook's parameters in a live kernel ---------------------------------------------

RUN_BY_PIPELINE = "MEMLIB_PIPELINE"  # set in the kernels run_notebook starts
SCRATCH = "scratch"  # build/scratch: where an interactive kernel's figures go unless asked


class NotebookStop(Exception):
    """A notebook cannot go on as its parameters cell stands. IPython shows an exception's
    `_render_traceback_` instead of a traceback: here, the one line that says what to change."""

    def _render_traceback_(self) -> list[str]:
        return [f"memlib: {self}"]


def assigned_names(cell: str) -> list[str]:
    """The names a parameters cell's source `cell` assigns at its top level, up to the
    statement that calls notebook_config (a cell may do both); none when it does not parse."""
    import ast

    try:
        statements = ast.parse(cell).body
    except SyntaxError:
        return []
    names = []
    for statement in statements:
        if "notebook_config" in (ast.get_source_segment(cell, statement) or ""):
            break
        targets = (statement.targets if isinstance(statement, ast.Assign) else
                   [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign))
                   else [])
        names += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def parameters_cell(namespace: dict) -> str:
    """In a live IPython kernel, the source of the last cell run that assigns `scale` (the
    parameters cell: IPython keeps every cell's source in `In`); "" elsewhere."""
    for cell in reversed(namespace.get("In") or []):
        if "scale" in assigned_names(cell):
            return cell
    return ""


def unknown_setting(names: list[str], fields: list[str]) -> str | None:
    """One line for the first of `names` that is no setting (`fields`, and `scale`), naming
    the nearest setting; None when every name is one (private `_names` are not settings)."""
    import difflib

    for name in names:
        if name != "scale" and name not in fields and not name.startswith("_"):
            near = difflib.get_close_matches(name, fields, n=1, cutoff=0.5)
            hint = (f"did you mean {near[0]}?" if near else
                    f"the settings are {', '.join(fields)}")
            return f"{name} in the parameters cell is no setting; {hint}"
    return None


def notebook_config(study: str, namespace: dict):
    """The Config a notebook runs: the preset of the scale its parameters cell names, with
    every setting the cell assigns on top (what `memlib run STUDY --scale SCALE --set ...`
    runs). Run by `run_notebook`, papermill has injected every setting. In a live kernel
    (JupyterLab), the settings are taken out of `namespace` once read, so a line deleted from
    the parameters cell stops counting the next time the cell runs, instead of lingering in
    the kernel; and unless MEMLIB_FIGURES names a folder, the figures and tables go to
    build/scratch/, never into the committed figures/. A scale or setting that cannot be run,
    or a name the parameters cell assigns that is no setting (`seedz = 3`), stops the notebook
    with one line (NotebookStop)."""
    import dataclasses

    from memlib.config import build, to_dict
    from memlib.studies import module

    checkout = os.environ.get(RUN_BY_PIPELINE)
    if checkout and Path(checkout).resolve() != paths.repo_root():
        raise NotebookStop(f"this kernel imports memlib from {paths.repo_root()}, not from the "
                           f"checkout {checkout} that runs the notebook and whose code its "
                           "manifest names; install memlib from that checkout (pip install -e) "
                           "or put it first on PYTHONPATH")
    scale = namespace.get("scale")
    if scale not in SCALES:
        raise NotebookStop(f"scale = {scale!r} in the parameters cell is no scale; set it to "
                           f"one of: {', '.join(map(repr, SCALES))}")
    fields = [f.name for f in dataclasses.fields(module(study).Config) if f.init]
    if not os.environ.get(RUN_BY_PIPELINE):  # papermill's injected names were checked before
        typo = unknown_setting(assigned_names(parameters_cell(namespace)), fields)
        if typo:
            raise NotebookStop(typo)
    given = {k: namespace[k] for k in fields if k in namespace}
    try:
        config = build(module(study).Config, {**to_dict(preset_config(study, scale)), **given})
    except (ConfigError, PresetError) as err:
        raise NotebookStop(str(err)) from None
    from memlib.tables import tables_as_markdown

    tables_as_markdown()  # tables read as the book's others: no index, NaN or None
    if os.environ.get(RUN_BY_PIPELINE):
        return config
    for key in given:  # read once: a deleted line does not linger in the kernel
        del namespace[key]
    if not os.environ.get("MEMLIB_FIGURES"):
        os.environ["MEMLIB_FIGURES"] = str(paths.build_dir(scale).parent / SCRATCH)
    sets = ", ".join(f"{k}={v!r}" for k, v in given.items())
    print(f"memlib: the {scale} preset{f' with {sets}' if sets else ''}; figures and tables "
          f"go to {paths.figures_dir(STUDIES[study], scale)} (MEMLIB_FIGURES)")
    note = cold_start_note(study, scale) if scale != "full" else None
    if note:
        print(f"memlib: {note}")
    return config


def published_manifest(study: str, scale: str) -> dict | None:
    """The manifest of `study`'s committed outputs at `scale` (figures/ in the repository,
    whatever MEMLIB_FIGURES says); None when there is none to read."""
    root = paths.repo_root() / "figures"
    folder = root / STUDIES[study] if scale == DEFAULT_SCALE else root / scale / STUDIES[study]
    try:
        return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def cold_start_note(study: str, scale: str) -> str | None:
    """One line for a live kernel whose cache holds nothing of `study`: what computing it will
    take, from its published run's measured cold compute, and the two ways to be fast (the
    class kit, the smoke scale). None when the cache has some of it, or nothing was measured."""
    from memlib.prose import PROCESSES, cold_seconds, run_time

    cache = paths.cache_dir()
    manifest = published_manifest(study, scale)
    if manifest is None or (cache.is_dir() and any(cache.glob(f"{study}[-_]*.pt"))):
        return None
    faster = [f"unpack a class kit into {paths.results_dir()} "
              "(`tar -xzf class-kit.tar.gz -C results`)"]
    if scale != "smoke":
        faster.append('set `scale = "smoke"` in the parameters cell')
    return (f"nothing of this notebook is in the cache yet ({cache}): computing it takes "
            f"{run_time(cold_seconds(manifest), processes=PROCESSES)} (its published {scale} "
            f"run's measured compute); to be fast, {', or '.join(faster)}")


def run_command(study: str, config, scale: str) -> str:
    """The shell command that computes `config`'s results outside a notebook: the preset plus
    a `--set` for every value that differs from it."""
    from memlib.config import to_dict

    preset = to_dict(preset_config(study, scale))
    sets = [f"--set {shlex.quote(f'{k}={json.dumps(v) if isinstance(v, list) else v}')}"
            for k, v in to_dict(config).items() if preset.get(k) != v]
    launcher = "torchrun --standalone --nproc_per_node=<GPUs>" if scale == "full" else "python"
    return " ".join([launcher, "-m memlib run", study, "--scale", scale, *sets])


def study_results(study: str, config, scale: str) -> dict:
    """What a notebook calls for its results: `memlib.<study>.run(config)`.

    At full scale the training belongs to `memlib run` (on one GPU or several under
    torchrun), not to the notebook's kernel: the notebook reads the cache that run filled
    and, where an entry is missing, stops with one line naming the command to run.
    """
    from memlib.cache import only_cached
    from memlib.studies import module

    run = module(study).run
    if scale != "full":
        one_cpu_thread()
        return run(config)
    with only_cached(run_command(study, config, scale)):
        return run(config)
