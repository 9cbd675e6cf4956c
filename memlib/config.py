"""Frozen config dataclasses built from loosely typed parameters.

Parameters arrive from YAML (where `1e-3` is a string), from papermill's `-p`
(where lists become strings) and from `--set key=value` on the command line (all
strings). `build(cls, params)` coerces each value to the field's annotated type and
fails with one line naming the field and what it accepts.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml


class ConfigError(ValueError):
    """A bad parameter: the message is one line naming the valid choices."""


def build(cls, params: dict[str, Any] | None = None, **overrides):
    """Instantiate config dataclass `cls` from `params` (+ overrides), coercing types.

    Unknown keys are errors: a typo in a params file must not silently fall back to
    a default.
    """
    params = {**(params or {}), **overrides}
    hints = get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ConfigError(
            f"unknown parameter {unknown[0]!r} for {cls.__name__}; valid: {', '.join(names)}"
        )
    values = {k: coerce(v, hints[k], k) for k, v in params.items()}
    return cls(**values)


def to_dict(config) -> dict[str, Any]:
    """Plain, JSON-friendly dict of a config (tuples become lists)."""
    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
    }


def _parse_string(value: str):
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        return value


def coerce(value: Any, annotation: Any, name: str = "value") -> Any:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if type(None) in args:
                return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return coerce(value, option, name)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if errors else f"{name}: cannot be None")
    if origin is Literal:
        choices = args
        if isinstance(value, str) and all(isinstance(c, (int, float)) for c in choices):
            value = _parse_string(value)
        if value not in choices:
            raise ConfigError(
                f"{name}={value!r} is not valid; choose one of: {', '.join(map(str, choices))}"
            )
        return value
    if origin in (tuple, list, typing.Sequence):
        if isinstance(value, str):
            value = _parse_string(value)
        if not isinstance(value, (list, tuple)):
            value = [value]
        item = args[0] if args else Any
        return tuple(coerce(v, item, f"{name}[{i}]") for i, v in enumerate(value))
    if annotation is Any:
        return value
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "yes", "1", "false", "no", "0"):
            return value.lower() in ("true", "yes", "1")
        raise ConfigError(f"{name}={value!r} is not a boolean (true/false)")
    if annotation is int:
        if isinstance(value, bool):
            raise ConfigError(f"{name}={value!r} is not an integer")
        if isinstance(value, str):
            value = _parse_string(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise ConfigError(f"{name}={value!r} is not an integer")
        return value
    if annotation is float:
        if isinstance(value, bool):
            raise ConfigError(f"{name}={value!r} is not a number")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}={value!r} is not a number") from None
    if annotation is str:
        if not isinstance(value, (str, int, float)):
            raise ConfigError(f"{name}={value!r} is not a string")
        return str(value)
    if dataclasses.is_dataclass(annotation) and isinstance(value, dict):
        return build(annotation, value)
    return value


def check(condition: bool, message: str) -> None:
    """Raise ConfigError(message) unless `condition`: for cross-field rules in __post_init__."""
    if not condition:
        raise ConfigError(message)


def from_namespace(cls, namespace: dict[str, Any]):
    """Build `cls` from the variables of a notebook's parameters cell (e.g. `globals()`)."""
    names = [f.name for f in dataclasses.fields(cls)]
    return build(cls, {k: namespace[k] for k in names if k in namespace})
