"""Command line: `python -m memlib run|notebook|claims ...`.

Bad input (unknown study, scale, key, value) exits with code 2 and one line naming
the valid choices; missing data or a failing notebook exits with code 1 and one line.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from memlib import DEFAULT_SCALE, SCALES, STUDIES, paths


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
    from memlib.pipeline import NotebookError, params_file, read_params

    if overrides is not None and not overrides.is_file():
        raise UsageError(f"no overrides file {overrides}; --params takes a YAML file of "
                         "parameters, e.g. params/full/01_random_label_heads.imagenet.yaml")
    try:
        extra = read_params(overrides) if overrides is not None else {}
        return {**read_params(params_file(Path(stem), scale)), **extra, **sets}
    except NotebookError as err:
        raise UsageError(str(err)) from None


def run_study(study: str, scale: str, sets: dict[str, str], overrides: Path | None = None):
    """Run a study from its params file plus overrides (shares the notebook's cache)."""
    from memlib.config import ConfigError, build

    study = {stem: key for key, stem in STUDIES.items()}.get(study, study)  # stems work too
    if study not in STUDIES:
        raise UsageError(f"unknown study {study!r}; choose one of: {', '.join(STUDIES)}")
    from memlib import distributed

    distributed.init_from_env()  # no-op unless launched by torchrun
    module = importlib.import_module(f"memlib.{study}")
    if scale != "full":
        from memlib.pipeline import one_cpu_thread

        one_cpu_thread()  # as the notebooks do: the same results as theirs
    params = preset(STUDIES[study], scale, overrides, sets)
    try:
        config = build(module.Config, params)
    except ConfigError as err:
        raise UsageError(str(err)) from None
    return module.run(config)


def check_params(stem: str, params: dict) -> None:
    """Validate a study notebook's parameters before the kernel starts: a mistyped --set key
    must fail here, not be ignored by the notebook."""
    from memlib.config import ConfigError, build

    study = {s: key for key, s in STUDIES.items()}.get(stem)
    if study is not None:
        try:
            build(importlib.import_module(f"memlib.{study}").Config, params)
        except ConfigError as err:
            raise UsageError(str(err)) from None


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="memlib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run a study's experiments without the notebook")
    run.add_argument("study")
    run.add_argument("--scale", default=DEFAULT_SCALE)
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--params", type=Path, metavar="FILE",
                     help="a YAML file of overrides, applied before --set")
    nb = sub.add_parser("notebook", help="execute a notebook headlessly (papermill)")
    nb.add_argument("path", type=Path)
    nb.add_argument("--scale", default=DEFAULT_SCALE)
    nb.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a parameter of the scale's preset")
    nb.add_argument("--params", type=Path, metavar="FILE",
                    help="a YAML file of overrides, applied before --set")
    claims = sub.add_parser("claims", help="collect the claims tables into CLAIMS.md")
    claims.add_argument("--scale", default=DEFAULT_SCALE)

    try:
        args = parser.parse_args(argv)
        if args.scale not in SCALES:
            raise UsageError(f"unknown scale {args.scale!r}; choose one of: {', '.join(SCALES)}")
        if args.command == "run":
            from memlib.data import MissingDataError

            try:
                run_study(args.study, args.scale, parse_sets(args.set), args.params)
            except MissingDataError as err:  # one actionable sentence, not a traceback
                print(f"memlib: error: {err}", file=sys.stderr)
                return 1
        elif args.command == "notebook":
            from memlib.pipeline import NotebookError, run_notebook

            params = preset(args.path.stem, args.scale, args.params, parse_sets(args.set))
            check_params(args.path.stem, params)
            try:
                out = run_notebook(args.path, args.scale, params=params)
            except NotebookError as err:
                print(f"memlib: {err}", file=sys.stderr)
                return 1
            print(f"memlib: executed {args.path} -> {out.relative_to(paths.repo_root())}")
        else:
            from memlib.claims import collect

            collect(args.scale)
            print(f"memlib: wrote {paths.claims_report(args.scale)}")
    except UsageError as err:
        print(f"memlib: error: {err}", file=sys.stderr)
        return 2
    return 0
