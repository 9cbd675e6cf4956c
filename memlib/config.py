"""Frozen config dataclasses built from loosely typed parameters.

Parameters arrive from YAML (where `1e-3` is a string), from papermill's `-p`
(where lists become strings) and from `--set key=value` on the command line (all
strings). `build(cls, params)` coerces each value to the field's annotated type,
checks it against the field's declared domain and fails with one line naming the
field and what it accepts.

Domains are declared in the annotation, `epochs: Annotated[int, Positive, AtMost(10**4)] =
20`; on a sequence a domain applies to every item and `NonEmpty` to the sequence itself:
`seeds: Annotated[tuple[int, ...], NonEmpty, NonNegative, AtMost(SEED_MAX)] = (0,)`. Numbers
must be finite everywhere, and every integer has a ceiling; `Distinct` on a sequence refuses
repeated items (a seed given twice). Rules between fields stay in `__post_init__`, written
with `check` (and `check_stratified` for a sample count that must cover every class), so a
config that cannot run stops when it is built, before any work.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml


class ConfigError(ValueError):
    """A bad parameter: the message is one line naming the valid choices."""


@dataclasses.dataclass(frozen=True)
class Domain:
    """The values a number may take: `accepts(value)`, described by `means` ("positive")."""

    accepts: Callable[[Any], bool]
    means: str


@dataclasses.dataclass(frozen=True)
class MinLength:
    """A sequence with at least `n` items."""

    n: int


def Range(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
          hi_open: bool = False) -> Domain:
    """Numbers between `lo` and `hi` (either may be None: unbounded), closed unless open."""
    if hi is None:
        return Domain((lambda v: v > lo) if lo_open else (lambda v: v >= lo),
                      f"{'>' if lo_open else '>='} {lo}")
    if lo is None:
        return Domain((lambda v: v < hi) if hi_open else (lambda v: v <= hi),
                      f"{'<' if hi_open else '<='} {hi}")
    return Domain(lambda v: (lo < v if lo_open else lo <= v) and (v < hi if hi_open else v <= hi),
                  f"in {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}")


def AtLeast(n: float) -> Domain:
    return Range(n)


def AtMost(n: float) -> Domain:
    """A ceiling far above any preset: a value beyond it is a slip (`epochs=1000000000000`)
    that would otherwise start a run that never ends or fill the disk."""
    return Range(hi=n)


Positive = Domain(lambda v: v > 0, "positive")
NonNegative = Range(0)
Rate = Range(0, 1, hi_open=True)  # noise rates, dropout, label smoothing, pruned fractions
Fraction = Range(0, 1, lo_open=True)  # a non-empty share of something: (0, 1]
NonEmpty = MinLength(1)


@dataclasses.dataclass(frozen=True)
class _Distinct:
    """A sequence whose items do not repeat."""


Distinct = _Distinct()
SEED_MAX = 2**32 - 1  # NumPy's seeds end there


def build(cls, params: dict[str, Any] | None = None, **overrides):
    """Instantiate config dataclass `cls` from `params` (+ overrides), coercing types.

    Unknown keys are errors: a typo in a params file must not silently fall back to
    a default.
    """
    params = {**(params or {}), **overrides}
    hints = get_type_hints(cls, include_extras=True)
    names = _parameters(cls)
    unknown = sorted(set(params) - set(names), key=str)  # YAML keys may be numbers too
    if unknown:
        raise ConfigError(
            f"unknown parameter {unknown[0]!r} for {cls.__name__}; valid: {', '.join(names)}"
        )
    values = {k: coerce(v, hints[k], k) for k, v in params.items()}
    return cls(**values)


def to_dict(config) -> dict[str, Any]:
    """Plain, JSON-friendly dict of a config (tuples become lists), without the fields it
    derives as it is built (metadata "derived"), which are not parameters."""
    derived = {f.name for f in dataclasses.fields(config) if f.metadata.get("derived")}
    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(config).items() if k not in derived}


def _parse_string(value: str, name: str = "value"):
    """YAML's reading of `value`; a string that is not YAML stays a string, unless it opens a
    list or a mapping, where the syntax error is what the user needs to see."""
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as err:
        if value.lstrip()[:1] in ("[", "{"):
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise ConfigError(f"{name}={value!r} is not valid YAML: {problem}") from None
        return value


def _show(value: Any) -> str:
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def check_domain(value: Any, markers, name: str) -> None:
    """Raise ConfigError unless `value` lies in every domain of `markers` (None always does:
    whether None is allowed is the type's business). Repeats are looked for last, so that a
    list of bad values is told what is wrong with its values."""
    for marker in sorted(markers, key=lambda m: isinstance(m, _Distinct)):
        if isinstance(marker, MinLength):
            if value is not None and len(value) < marker.n:
                need = "must not be empty" if marker.n == 1 else f"needs >= {marker.n} values"
                raise ConfigError(f"{name}={_show(value)} {need}")
        elif isinstance(marker, _Distinct):
            repeated = [v for i, v in enumerate(value or ()) if v in value[:i]]
            if repeated:
                raise ConfigError(f"{name}={_show(value)} repeats {repeated[0]!r}; give each "
                                  "value once")
        elif isinstance(marker, Domain):
            items = (enumerate(value) if isinstance(value, (tuple, list)) else
                     [(None, value)])
            for i, item in items:
                if item is not None and not marker.accepts(item):
                    where = name if i is None else f"{name}[{i}]"
                    raise ConfigError(f"{where}={item!r} must be {marker.means}")


def coerce(value: Any, annotation: Any, name: str = "value") -> Any:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        value = coerce(value, args[0], name)
        check_domain(value, annotation.__metadata__, name)
        return value
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
            value = _parse_string(value, name)
        if value not in choices:
            raise ConfigError(
                f"{name}={value!r} is not valid; choose one of: {', '.join(map(str, choices))}"
            )
        return value
    if origin in (tuple, list, typing.Sequence):
        if isinstance(value, str):
            value = _parse_string(value, name)
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
        given = value
        if isinstance(value, str):
            value = _parse_string(value, name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):  # YAML reads "true" as True
            raise ConfigError(f"{name}={given!r} is not an integer")
        return value
    if annotation is float:
        if isinstance(value, bool):
            raise ConfigError(f"{name}={value!r} is not a number")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}={value!r} is not a number") from None
        if not math.isfinite(number):
            raise ConfigError(f"{name}={value!r} is not a finite number")
        return number
    if annotation is str:
        if not isinstance(value, (str, int, float)):
            raise ConfigError(f"{name}={value!r} is not a string")
        return str(value)
    if dataclasses.is_dataclass(annotation) and isinstance(value, dict):
        return build(annotation, value)
    return value


@functools.cache
def _domains(cls) -> dict[str, tuple]:
    hints = get_type_hints(cls, include_extras=True)
    return {name: hint.__metadata__ for name, hint in hints.items()
            if get_origin(hint) is Annotated}


def check_fields(config) -> None:
    """Check every field of `config` against its declared domain: the first line of a config's
    `__post_init__`, so configs made directly or by `dataclasses.replace` are checked too."""
    for name, markers in _domains(type(config)).items():
        check_domain(getattr(config, name), markers, name)


def check(condition: bool, message: str) -> None:
    """Raise ConfigError(message) unless `condition`: for cross-field rules in __post_init__."""
    if not condition:
        raise ConfigError(message)


def check_stratified(name: str, count: int | None, classes: int, dataset: str) -> None:
    """Raise ConfigError unless a class-stratified subset of `count` samples (None or 0: the
    whole split) can hold one sample of each of the `classes` classes of `dataset`."""
    check(not count or count >= classes,
          f"{name}={count} is below the {classes} classes of {dataset}: a class-stratified "
          "subset needs one sample of each")


def from_namespace(cls, namespace: dict[str, Any]):
    """Build `cls` from the variables of a notebook's parameters cell (e.g. `globals()`)."""
    return build(cls, {k: namespace[k] for k in _parameters(cls) if k in namespace})


def _parameters(cls) -> list[str]:
    """The fields a config is built from (not those it derives as it is built)."""
    return [f.name for f in dataclasses.fields(cls) if f.init]


def confirmatory_seeds(config) -> tuple[int, ...]:
    """Every seed a preset's confirmatory run uses: `seeds`, then the seeds of each arm that
    runs on seeds of its own (the fields its class names in `ARM_SEEDS`), which must be as
    fresh as `seeds` and are registered with them."""
    arms = getattr(type(config), "ARM_SEEDS", ())
    return (*config.seeds, *(s for name in arms for s in getattr(config, name)))
