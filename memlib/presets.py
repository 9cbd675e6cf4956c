"""A study's preset: its parameter file params/<scale>/<notebook>.yaml and the Config it sets.

Read by the notebook runner, the command line (through `memlib.studies`, which knows each
study's Config) and any study that builds on another's preset (the lens on study 1's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from memlib import STUDIES, paths


class PresetError(RuntimeError):
    """A parameter file is missing or not a mapping of names to values; one line."""


def params_file(notebook: Path, scale: str) -> Path:
    return paths.repo_root() / "params" / scale / f"{Path(notebook).stem}.yaml"


def read_params(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise PresetError(f"no parameter file {path}; create it or pick another scale")
    try:
        params = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as err:
        raise PresetError(f"{path} is not UTF-8 text (byte {err.start}); save it as UTF-8"
                          ) from None
    except yaml.YAMLError as err:
        raise PresetError(f"{path} is not valid YAML: {err}".replace("\n", " ")) from None
    if not isinstance(params, dict):
        raise PresetError(f"{path} must hold a mapping of parameter names to values")
    return params


_DEFAULTS: dict[str, dict[str, Any]] = {}


def declare_defaults(study: str, config_class: type) -> None:
    """Record `config_class`'s defaults as study `study`'s small run, the values a preset
    file changes. Each study's config module calls it, so a study is known here once loaded."""
    import dataclasses

    _DEFAULTS[study] = {f.name: f.default for f in dataclasses.fields(config_class)
                        if f.init and f.default is not dataclasses.MISSING}


def declared(study: str, path: Path) -> dict[str, Any]:
    """The values study `study`'s parameter file `path` states, as written: its Config's
    defaults (the small run), changed by the file; nothing resolved or coerced, so the same on
    every machine (a claim's fingerprint covers them)."""
    if study not in _DEFAULTS:
        raise PresetError(f"study {study!r} has declared no defaults (its config module is not "
                          "loaded)")
    return {**_DEFAULTS[study], **read_params(path)}


def preset_of(config_class: type, study: str, scale: str):
    """`config_class` (study `study`'s Config) as its parameter file for `scale` sets it."""
    from memlib.config import build

    return build(config_class, read_params(params_file(Path(STUDIES[study]), scale)))
