"""Command line: `python -m memlib run|notebook|claims|measure ...`.

Every mistake ends in one line on stderr and an exit code: 0 done, 1 data or environment
(missing or damaged data, a folder that cannot be written, a full disk, a failing notebook,
a class kit made with other library versions, CPU pins or platform than this machine's), 2 bad
input (unknown study, scale, key, model or notebook, a value outside its domain or
against a rule between values, a subset the data cannot give, a device this machine lacks, a
params file that is not UTF-8, a notebook without a parameters cell, a bad
MEMLIB_CHECKPOINT_MINUTES), 130 interrupted (Ctrl-C; rerunning resumes).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

from memlib import DEFAULT_SCALE, SCALES, STUDIES, STUDY_OF, paths, studies
from memlib.process import one_line_warning

INTERRUPTED = 130  # the shell's code for a process ended by SIGINT


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line instead of argparse's usage block
        raise UsageError(message)


def parse_sets(pairs: list[str]) -> dict[str, str]:
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--set expects key=value, got {pair!r}")
        values[key.strip()] = value
    return values


def preset(stem: str, scale: str, overrides: Path | None, sets: dict[str, str]) -> dict:
    """The scale's parameter file, then an overrides file (`--params`), then `--set`s."""
    from memlib.presets import PresetError, params_file, read_params

    if overrides is not None and not overrides.is_file():
        raise UsageError(f"no overrides file {overrides}; --params takes a YAML file of "
                         "parameters, e.g. params/full/01_random_label_heads.imagenet.yaml")
    try:
        extra = read_params(overrides) if overrides is not None else {}
        return {**read_params(params_file(Path(stem), scale)), **extra, **sets}
    except PresetError as err:
        raise UsageError(str(err)) from None


@contextlib.contextmanager
def workers_set(value: str | None):
    """`--workers N` as MEMLIB_WORKERS for the command (the notebook's kernel and every worker
    process inherit it), as it was again after; a bad value, or a bad MEMLIB_WORKERS, is a
    UsageError before any work."""
    from memlib.process import WORKERS_VARIABLE, parse_workers

    before = os.environ.get(WORKERS_VARIABLE)
    try:
        if value is not None:
            value = str(parse_workers(value, "--workers"))
        elif before is not None and before.strip():
            parse_workers(before, WORKERS_VARIABLE)
    except ValueError as err:
        raise UsageError(str(err)) from None
    with _environ_set(WORKERS_VARIABLE, value):
        yield


@contextlib.contextmanager
def scheduler_set(address: str | None):
    """`--scheduler ADDRESS` as MEMLIB_SCHEDULER for the command, as it was again after."""
    from memlib.cluster import SCHEDULER_VARIABLE

    if address is not None:
        if not address.strip() or any(c.isspace() for c in address.strip()):
            raise UsageError(f"--scheduler takes a Dask scheduler's address such as "
                             f"tcp://HOST:8786, got {address!r}")
        address = address.strip()
    with _environ_set(SCHEDULER_VARIABLE, address):
        yield


@contextlib.contextmanager
def _environ_set(name: str, value: str | None):
    """The environment variable `name` set to `value` (left as it is when None) for the
    block, and as it was again after."""
    before = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def study_config(study: str, params: dict):
    """The study's Config built from `params`; bad values are a UsageError."""
    from memlib.config import ConfigError, build

    try:
        return build(studies.module(study).Config, params)
    except ConfigError as err:
        raise UsageError(str(err)) from None


def check_environment(*folders: tuple[Path, str]) -> None:
    """Before any work: MEMLIB_CHECKPOINT_MINUTES is a number > 0 (else UsageError) and every
    (folder, variable naming it) can be written (else paths.NotWritableError)."""
    from memlib.config import ConfigError
    from memlib.train import checkpoint_minutes

    try:
        checkpoint_minutes()
    except ConfigError as err:
        raise UsageError(str(err)) from None
    for folder, variable in folders:
        paths.require_writable(folder, variable)


def run_study(study: str, scale: str, sets: dict[str, str], overrides: Path | None = None):
    """Run a study from its params file plus overrides (shares the notebook's cache)."""
    study = STUDY_OF.get(study, study)  # stems work too
    if study not in STUDIES:
        raise UsageError(f"unknown study {study!r}; choose one of: {', '.join(STUDIES)}")
    from memlib import distributed

    distributed.init_from_env()  # no-op unless launched by torchrun
    config = study_config(study, preset(STUDIES[study], scale, overrides, sets))
    check_environment((paths.cache_dir(), "MEMLIB_CACHE"))
    studies.check_before_a_run(study, config)
    compute_as_the_notebooks_do(scale)
    return studies.module(study).run(config)


def compute_as_the_notebooks_do(scale: str) -> None:
    """Below full scale on one CPU thread, as the notebooks compute: the same bits as theirs
    under the same cache keys, whatever thread count this process started with."""
    if scale != "full":
        from memlib.process import one_cpu_thread

        one_cpu_thread()


def check_params(stem: str, params: dict) -> dict:
    """Validate a study notebook's parameters before the kernel starts (a mistyped --set key
    must fail here, not be ignored by the notebook); return them typed as the study's Config
    reads them, so the notebook and its manifest see 3, not "3"."""
    from memlib.config import to_dict

    study = STUDY_OF.get(stem)
    if study is None:
        return params
    typed = to_dict(study_config(study, params))
    return {key: typed.get(key, value) for key, value in params.items()}


def find_notebook(path: Path) -> Path:
    """`path` if it is a notebook file, here or relative to the repository (so that
    `notebooks/03_....py` works from any folder); else a UsageError naming the notebooks."""
    for candidate in (path, paths.repo_root() / path):
        if candidate.is_file():
            return candidate
    known = [_shown(p) for p in sorted((paths.repo_root() / "notebooks").glob("[0-9]*.py"))]
    match = [p for p in known if p.stem == path.stem]
    hint = (f"did you mean {match[0]}?" if match else
            f"the notebooks are {', '.join(map(str, known))}")
    raise UsageError(f"no such notebook {path}; {hint}")


def add_compute_options(command, preset: str) -> None:
    """--workers and --scheduler, for a command whose runs are computed by memlib.runs."""
    command.add_argument("--workers", metavar="N",
                         help=f"runs computed at once (default: $MEMLIB_WORKERS, else the "
                              f"{preset}'s parallel_runs, else the cores this process may use)")
    command.add_argument("--scheduler", metavar="ADDRESS",
                         help="compute the missing runs on the Dask cluster whose scheduler is "
                              "at ADDRESS, e.g. tcp://HOST:8786 (default: $MEMLIB_SCHEDULER)")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="memlib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run a study's experiments without the notebook")
    run.add_argument("study", help="a study, a notebook's stem, or all (every study, two at "
                                   "a time, the dearest first)")
    run.add_argument("--scale", default=DEFAULT_SCALE)
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--params", type=Path, metavar="FILE",
                     help="a YAML file of overrides, applied before --set")
    add_compute_options(run, "study")
    nb = sub.add_parser("notebook", help="execute a notebook headlessly (papermill)")
    nb.add_argument("path", type=Path)
    nb.add_argument("--scale", default=DEFAULT_SCALE)
    nb.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a parameter of the scale's preset")
    nb.add_argument("--params", type=Path, metavar="FILE",
                    help="a YAML file of overrides, applied before --set")
    nb.add_argument("--workers", metavar="N",
                    help="runs computed at once (default: $MEMLIB_WORKERS, else the study's "
                         "parallel_runs, else the cores this process may use)")
    claims = sub.add_parser("claims", help="collect the claims tables into CLAIMS.md")
    claims.add_argument("--scale", default=DEFAULT_SCALE)
    reg = sub.add_parser("register", help="record the fingerprint of every changed claim rule")
    reg.add_argument("study")
    reg.add_argument("--reason", required=True, help="why the rule is (re)registered")
    reg.add_argument("--seeds", metavar="S,S,...",
                     help="fresh seeds for a new confirmatory run: the current run's verdicts "
                          "are kept under register/earlier/ and shown beside the new ones; each "
                          "rule's n and Holm's family (pilots/<notebook>_power_run.csv's "
                          "family column) are recorded with them")
    reg.add_argument("--moved", action="store_true",
                     help="the rules did not change, only where their code or the preset "
                          "values they read live: verified by evaluating the committed and "
                          "the working tree's rules on the stored values; each new entry "
                          "records the same rule as the version before it")
    reg.add_argument("--rekeyed-from", metavar="COMMIT",
                     help="code every rule shares changed since COMMIT (the verdict order, the "
                          "statistics, the fingerprint scheme): each earlier version a rule "
                          "keeps is recorded under its fingerprint now, found by its words "
                          "among COMMIT's rules")
    reg.add_argument("--replication", action="store_true",
                     help="with --seeds: a second confirmatory run of rule versions that "
                          "already had one, shown beside it")
    reg.add_argument("--new-register", action="store_true",
                     help="start an empty register for a study that has none: every rule is "
                          "registered today as version 1, with no seeds and no earlier runs; "
                          "the history of a lost register is lost with it (restore that from "
                          "version control instead)")
    reg.set_defaults(scale=DEFAULT_SCALE)
    me = sub.add_parser("measure", help="the four papers' measures of any timm or "
                                        "torchvision model on a dataset; an HTML report")
    me.add_argument("--model", required=True,
                    help="memlib's own (mlp, resnet18, ...), torchvision's, or timm:NAME")
    me.add_argument("--data", required=True, metavar="DATASET")
    me.add_argument("--layers", metavar="A,B,...", help="default: the model's natural stages")
    me.add_argument("--noise", type=float, default=0.0, help="share of labels corrupted")
    me.add_argument("--epochs", type=int)
    me.add_argument("--seeds", metavar="S,S,...")
    me.add_argument("--scale", default="smoke")
    me.add_argument("--out", type=Path, metavar="DIR")
    me.add_argument("--checkpoint", type=Path, metavar="PATH",
                    help="a state dict to start from (read with weights_only)")
    me.add_argument("--list-layers", action="store_true", help="print the layers and stop")
    add_compute_options(me, "scale")
    sub.add_parser("class-kit", help="pack the results cache for a class into "
                                     "$MEMLIB_BUILD/class-kit.tar.gz").set_defaults(
        scale=DEFAULT_SCALE)
    kc = sub.add_parser("kit-check", help="say whether a class kit will load on this machine, "
                                          "or what differs")
    kc.add_argument("kit", type=Path)
    kc.set_defaults(scale=DEFAULT_SCALE)
    sub.add_parser("clean", help="remove the cache, the executed notebooks and the book"
                   ).set_defaults(scale=DEFAULT_SCALE)
    book = sub.add_parser("book", help="build the static HTML book of the published notebooks "
                                       "(python -m memlib.book)")
    book.add_argument("--scale", default=DEFAULT_SCALE)

    warnings.formatwarning = one_line_warning
    _tolerant_output()
    running = "memlib"
    try:
        args = parser.parse_args(argv)
        if args.scale not in SCALES:
            raise UsageError(f"unknown scale {args.scale!r}; choose one of: {', '.join(SCALES)}")
        if args.command == "run":
            running = (f"run {args.study} at {args.scale} scale (finished results are in "
                           "the cache)")
            with workers_set(args.workers), scheduler_set(args.scheduler):
                return _run_all(args) if args.study == "all" else _run(args)
        if args.command == "notebook":
            running = (f"notebook {args.path.name} at {args.scale} scale (its published "
                           "outputs are unchanged)")
            with workers_set(args.workers):
                return _notebook(args)
        if args.command == "register":
            return _register(args)
        if args.command == "measure":
            running = f"measure {args.model} on {args.data} (finished runs are in the cache)"
            with workers_set(args.workers), scheduler_set(args.scheduler):
                return _measure(args)
        if args.command in ("class-kit", "clean"):
            return _kit(args.command)
        if args.command == "book":
            return _book(args.scale)
        if args.command == "kit-check":
            return _kit_check(args.kit)
        return _claims(args)
    except UsageError as err:
        print(f"memlib: error: {err}", file=sys.stderr)
        return 2
    except paths.NotWritableError as err:
        print(f"memlib: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # the last resort for a full disk or a vanished folder
        print(f"memlib: error: {_os_error(err)}; stopped {running}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"memlib: interrupted {running}; rerun the same command to resume from the "
              "last checkpoint", file=sys.stderr)
        return INTERRUPTED
    return 0


def _tolerant_output() -> None:
    """A line naming a folder is printed whatever the terminal's encoding (an ASCII-only
    stdout and a non-ASCII cache path): a character it cannot show is escaped, never the
    end of a run that has done all its work."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def _book(scale: str) -> int:
    """`python -m memlib.book`, behind this command line: a Ctrl-C while its libraries load
    (the first seconds) ends in one line, as one later does."""
    try:
        from memlib.book import main as build_book
    except KeyboardInterrupt:
        print("memlib: interrupted; the book was left as it was", file=sys.stderr)
        return INTERRUPTED
    return build_book(["--scale", scale])


def _kit(command: str) -> int:
    from memlib import kit

    if command == "clean":
        removed, kept = kit.clean()
        print(f"memlib: removed {', '.join(map(str, map(_shown, removed))) or 'nothing'}")
        if kept:
            print(f"memlib: kept {'; '.join(kept)}")
        return 0
    try:
        packed = kit.class_kit()
    except kit.KitError as err:
        print(f"memlib: error: {err}", file=sys.stderr)
        return 1
    print(f"memlib: wrote {_shown(packed)} ({packed.stat().st_size / 2**20:.1f} MiB)")
    return 0


def _kit_check(path: Path) -> int:
    """0 when the kit will load here, 1 when something differs, 2 when it is no kit."""
    from memlib import kit

    try:
        loads, line = kit.check(path)
    except kit.KitError as err:
        raise UsageError(str(err)) from None
    print(f"memlib: {line}", file=sys.stdout if loads else sys.stderr)
    return 0 if loads else 1


def _os_error(err: OSError) -> str:
    """`err` in one line: what went wrong and where."""
    where = f" ({err.filename})" if err.filename else ""
    return f"{(err.strerror or str(err)).lower()}{where}".replace("\n", " ")


def _shown(path: Path) -> Path:
    """`path` relative to the repository when it lies inside it."""
    try:
        return path.relative_to(paths.repo_root())
    except ValueError:
        return path


def _run(args) -> int:
    from memlib import cache, distributed
    from memlib.cluster import ClusterError
    from memlib.config import ConfigError
    from memlib.data import DataError, DataRequestError

    start = time.monotonic()
    cache.activity.clear()
    try:
        run_study(args.study, args.scale, parse_sets(args.set), args.params)
    except (DataError, ClusterError) as err:  # one actionable sentence, not a traceback
        print(f"memlib: error: {err}", file=sys.stderr)
        return 1
    except (ConfigError, DataRequestError) as err:  # a value only the data could refuse
        raise UsageError(" ".join(str(err).split())) from None
    except (MemoryError, RuntimeError) as err:
        if not _out_of_memory(err):
            raise
        print(f"memlib: error: {args.study} at {args.scale} scale ran out of memory "
              f"({_first_line(err)}); choose smaller sizes (widths, batch_size, "
              "parallel_runs) or a machine with more memory; finished results are in the "
              "cache", file=sys.stderr)
        return 1
    if distributed.is_main():
        print(f"memlib: {args.study} at {args.scale} scale done in "
              f"{time.monotonic() - start:.1f} s; {_where_results_are(cache.activity)}")
    return 0


def _run_all(args) -> int:
    """`memlib run all`: every study's runs, as memlib.schedule plans them."""
    from memlib import schedule

    if args.set or args.params:
        raise UsageError("`memlib run all` takes no --set or --params (they would apply to "
                         "every study); run one study to change its settings")
    if args.scale == "full":
        raise UsageError("at full scale each study runs under torchrun: `make figures "
                         "SCALE=full` runs them one by one")
    check_environment((paths.cache_dir(), "MEMLIB_CACHE"))
    return schedule.run_all(args.scale)


def _out_of_memory(err: BaseException) -> bool:
    """Whether `err` is an allocation that failed: Python's MemoryError, or torch's
    RuntimeError for the CPU ("not enough memory") or a GPU ("out of memory")."""
    if isinstance(err, MemoryError):
        return True
    text = str(err).lower()
    return "not enough memory" in text or "out of memory" in text


def _first_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return (text[:200] + "...") if len(text) > 200 else (text or type(err).__name__)


def _measure(args) -> int:
    from memlib import measure
    from memlib.cluster import ClusterError, scheduler
    from memlib.config import ConfigError
    from memlib.data import DataError, DataRequestError

    if args.checkpoint is not None and scheduler():
        # a Dask worker shares no filesystem with this machine: it could not read the file
        raise UsageError("--checkpoint runs on this machine only: a Dask cluster's workers "
                         "cannot read the file; leave out --scheduler (and MEMLIB_SCHEDULER)")

    def items(text: str | None, kind=str) -> tuple | None:
        if text is None:
            return None
        try:
            return tuple(kind(x.strip()) for x in text.split(",") if x.strip())
        except ValueError:
            raise UsageError(f"--seeds expects integers separated by commas, got {text!r}"
                             ) from None

    request = measure.Request(
        model=args.model, dataset=args.data, layers=items(args.layers), noise=args.noise,
        epochs=args.epochs, seeds=items(args.seeds, int), scale=args.scale,
        checkpoint=None if args.checkpoint is None else str(args.checkpoint))
    try:
        if args.list_layers:
            chosen, natural = measure.layers_of(request)
            print("\n".join(f"{name}{'  (measured by default)' * (name in chosen)}"
                            for name in natural))
            return 0
        compute_as_the_notebooks_do(args.scale)
        default = paths.results_dir() / "measure" / (
            f"{args.model.replace(':', '-')}-{args.data}-{args.scale}")
        out = args.out or default
        done = measure.measure(request, out)
    except measure.InputError as err:
        raise UsageError(str(err)) from None
    except (DataError, ClusterError) as err:
        print(f"memlib: error: {err}", file=sys.stderr)
        return 1
    except (ConfigError, DataRequestError) as err:
        raise UsageError(" ".join(str(err).split())) from None
    print(f"memlib: measured {args.model} on {args.data} in {done['seconds']:.1f} s; the "
          f"report is {_shown(out / 'report.html')}, the tables beside it")
    return 0


def _where_results_are(activity) -> str:
    """What a run's results came to and where they are, from the cache's `activity` counts."""
    counts = dict(activity)
    unwritten = counts.pop("not written", 0)
    done = ", ".join(f"{n} {how}" for how, n in sorted(counts.items())) or "nothing"
    told = f"results ({done}) are in {_shown(paths.cache_dir())}, where its notebook reads them"
    if unwritten:
        told += (f", except {unwritten} that could not be written there and will be computed "
                 "again by the next run")
    return told


def _claims(args) -> int:
    from memlib.claims import DamagedFileError, collect

    paths.require_writable(paths.figures_root(), "MEMLIB_FIGURES")
    try:
        # the rows the scale's presets produce: the fingerprints of the registered rules
        collect(args.scale, code=lambda study: {
            c.id: c.fingerprint for c in studies.study_claims(study)
            if c.id not in studies.claims_not_at(study, args.scale)})
    except DamagedFileError as err:
        print(f"memlib: error: {err}", file=sys.stderr)
        return 1
    print(f"memlib: wrote {paths.claims_report(args.scale)}")
    return 0


def _register(args) -> int:
    from memlib.claims import DamagedFileError

    try:
        return _register_study(args)
    except DamagedFileError as err:
        print(f"memlib: error: {err}", file=sys.stderr)
        return 1


def _register_study(args) -> int:
    import datetime

    from memlib.claims import (
        check_reason,
        new_confirmatory_run,
        parse_seeds,
        read_register,
        register,
        register_path,
    )
    from memlib.claims.register import planned_power, verify_register

    study = STUDY_OF.get(args.study, args.study)
    if study not in STUDIES:
        raise UsageError(f"unknown study {args.study!r}; choose one of: {', '.join(STUDIES)}")
    try:  # every check before anything is written
        check_reason(args.reason)
        seeds = None if args.seeds is None else parse_seeds(args.seeds)
    except ValueError as err:
        raise UsageError(f"{err}") from None
    if args.replication and seeds is None:
        raise UsageError("--replication names a new confirmatory run: give its --seeds")
    starting = args.new_register and not register_path(study).exists()
    if args.new_register and not starting:
        raise UsageError(f"--new-register: {_shown(register_path(study))} exists; it is "
                         "appended to, never started again")
    if starting and (seeds is not None or args.moved or args.rekeyed_from):
        raise UsageError("--new-register starts an empty register: register its rules first, "
                         "then --seeds, --moved or --rekeyed-from")
    if not starting:
        verify_register(study)  # intact, and extending the claims report's anchor
    today = datetime.date.today().isoformat()
    claims = studies.study_claims(study)
    if args.moved:
        _verify_moved(study, claims)
    if seeds is not None:
        try:
            frozen = new_confirmatory_run(study, seeds, args.reason, today, claims,
                                          replication=args.replication,
                                          power=planned_power(study))
        except ValueError as err:
            raise UsageError(f"--seeds {args.seeds}: {err}") from None
        print(f"memlib: the confirmatory seeds of {study} are now {args.seeds} (set them as "
              f"the defaults in memlib/studies/{study}/config.py); the earlier run's verdicts "
              f"are kept in {_shown(frozen)}")
        fixed = read_register(study)
        outside = fixed.get("outside_family") or {}
        print(f"memlib: Holm's family of {study}: {len(fixed.get('family') or [])} rule(s)"
              + "".join(f"; {rule} left out ({why})" for rule, why in outside.items()))
    if args.rekeyed_from:
        _rekey(study, claims, args.rekeyed_from, args.reason, today)
    added = register(study, claims, args.reason, today, moved=args.moved, new=starting)
    if starting:
        print(f"memlib: started {_shown(register_path(study))} empty: no seeds, no earlier "
              "runs, every rule version 1 as of today")
    print(f"memlib: registered {len(added)} rule(s) of {study} in "
          f"{_shown(register_path(study))}: {', '.join(added) or 'none changed'}")
    return 0


def _rekey(study: str, claims, commit: str, reason: str, today: str) -> None:
    """Record the earlier versions `claims` keep under their fingerprints now, found by their
    words among the rules of `commit` (`claims.register.rekey_earlier`)."""
    import subprocess
    import tempfile

    from memlib.claims.register import rekey_earlier
    from memlib.claims.values import committed_tree, earlier_prints

    with tempfile.TemporaryDirectory() as folder:
        try:
            earlier = earlier_prints(study, committed_tree(Path(folder), commit))
        except subprocess.CalledProcessError:
            raise UsageError(f"--rekeyed-from {commit}: not a commit of this repository") \
                from None
        except RuntimeError as err:
            raise UsageError(f"--rekeyed-from {commit}: {err}") from None
    added = rekey_earlier(study, claims, earlier, reason, today)
    print(f"memlib: recorded {len(added)} earlier version(s) of {study} under their "
          f"fingerprints now: {', '.join(added) or 'none'}")


def _verify_moved(study: str, claims) -> None:
    """UsageError unless every rule whose fingerprint changed gives the same verdict and
    value under the committed code as under the working tree's (`claims.values`)."""
    import tempfile

    from memlib.claims import latest_registration
    from memlib.claims.values import committed_tree, verify_moved

    latest = latest_registration(study)
    moved = [c.id for c in claims if c.id in latest
             and latest[c.id]["fingerprint"] != c.fingerprint]
    if not moved:
        return
    with tempfile.TemporaryDirectory() as folder:
        differ, basis = verify_moved(study, claims, committed_tree(Path(folder)), moved)
    if differ:
        raise UsageError(f"--moved: {len(differ)} outcome(s) differ between the committed "
                         f"and the changed rules on {basis}, e.g. {differ[0]}: register them "
                         "as new versions with their reason")
    print(f"memlib: --moved verified: {len(moved)} rule(s) give the same verdicts and values "
          f"on {basis}")


def _notebook(args) -> int:
    from memlib.config import ConfigError
    from memlib.data import DataError, DataRequestError
    from memlib.pipeline import NotebookError, NotebookInputError, run_notebook

    path = find_notebook(args.path)
    params = check_params(path.stem, preset(path.stem, args.scale, args.params,
                                            parse_sets(args.set)))
    if path.stem in STUDY_OF:  # what only the data can refuse, before the kernel starts
        try:
            studies.check_before_a_run(STUDY_OF[path.stem],
                                       study_config(STUDY_OF[path.stem], params))
        except DataError as err:
            print(f"memlib: error: {err}", file=sys.stderr)
            return 1
        except (ConfigError, DataRequestError) as err:
            raise UsageError(" ".join(str(err).split())) from None
    check_environment((paths.cache_dir(), "MEMLIB_CACHE"),
                      (paths.figures_root(), "MEMLIB_FIGURES"),
                      (paths.build_dir(args.scale), "MEMLIB_BUILD"))
    start = time.monotonic()
    try:
        out = run_notebook(path, args.scale, params=params)
    except NotebookInputError as err:
        raise UsageError(str(err)) from None
    except NotebookError as err:
        print(f"memlib: {err}", file=sys.stderr)
        return 1
    print(f"memlib: executed {path} -> {_shown(out)} in {time.monotonic() - start:.0f} s")
    return 0
