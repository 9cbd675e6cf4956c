"""Runs as objects: every cached result is a registered computation applied to a frozen spec.

`@computation(name, version, uses=(...))` registers a function of one argument. Its entry's
key is the computation's name and version, the frozen spec (the argument, or what `spec`
makes of it: exactly what the result is computed from, its `device` resolved), the
fingerprint of the function and of the memlib code it reaches (`fingerprint.closure`, syntax
trees: comments, docstrings, annotations and layout never re-key; the classes of the
argument, so a config's properties count) and of any module it declares it uses, where it
was computed (the device, and for a GPU its model and CUDA/cuDNN versions) and with what
(the versions of torch, numpy and of every computing library its code reaches), and the CPU
dispatch (`cache.key`). Code that only schedules runs or evaluates claims is not reached by
a computation, so editing it re-keys nothing.

A computation whose result comes from a closure inside a study function (`computation.get(spec,
compute)`) is registered the same way, on the function that builds the closure.

`has`, `load` and `compute_missing(plan, processes)` are the one way to find and compute
missing runs: an entry whose bytes do not match their digest counts as missing.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from memlib import cache, cluster, distributed, fingerprint, parallel

REGISTRY: dict[str, Computation] = {}
# the libraries whose version can change a result's bits (their distribution's name): torch
# and numpy always, the others where a computation's code reaches them
COMPUTING_LIBRARIES = {"torch": "torch", "numpy": "numpy", "scipy": "scipy",
                       "sklearn": "scikit-learn", "torchvision": "torchvision", "timm": "timm",
                       "transformers": "transformers"}
ALWAYS_KEYED = ("torch", "numpy")


@functools.cache
def library_version(name: str) -> str:
    """The installed version of the computing library `name` ("absent" when not installed)."""
    try:
        return importlib.metadata.version(COMPUTING_LIBRARIES[name])
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _devices(spec: Any) -> set[str]:
    """Every `device` a frozen spec names, at any depth."""
    found: set[str] = set()
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == "device" and isinstance(v, str):
                found.add(v)
            else:
                found |= _devices(v)
    elif isinstance(spec, list):
        for v in spec:
            found |= _devices(v)
    return found


@functools.cache
def describe_device(name: str) -> str:
    """What a result computed on device `name` depends on: "cpu", or the GPU's model, compute
    capability and CUDA and cuDNN versions. "auto" is refused: a key names where it was
    computed, so every study resolves its device before keying."""
    import torch

    if name == "auto":
        raise ValueError("a spec's device must be resolved before it is keyed, not 'auto'")
    device = torch.device(name)
    if device.type != "cuda":
        return device.type
    major, minor = torch.cuda.get_device_capability(device)
    return (f"cuda {torch.cuda.get_device_name(device)} sm_{major}{minor} "
            f"cuda {torch.version.cuda} cudnn {torch.backends.cudnn.version()}")


def _classes(argument: Any, package: str = "memlib") -> tuple[type, ...]:
    """The package's classes of `argument` and of the dataclasses and containers inside it:
    their methods and properties are part of what computes the result."""
    found: dict[type, None] = {}
    todo = [argument]
    while todo:
        value = todo.pop()
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            if type(value).__module__.split(".")[0] == package:
                found[type(value)] = None
            todo += [getattr(value, f.name) for f in dataclasses.fields(value)]
            todo += [v for v in vars(value).values() if dataclasses.is_dataclass(v)]
        elif isinstance(value, (list, tuple)):
            todo += list(value)
        elif isinstance(value, dict):
            todo += list(value.values())
    return tuple(sorted(found, key=lambda c: (c.__module__, c.__qualname__)))


def _frozen(spec: Any) -> Any:
    """The spec as the key sees it: a dataclass as its fields, containers as plain data."""
    if dataclasses.is_dataclass(spec) and not isinstance(spec, type):
        return {f.name: _frozen(getattr(spec, f.name)) for f in dataclasses.fields(spec)}
    if isinstance(spec, dict):
        return {str(k): _frozen(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return [_frozen(v) for v in spec]
    return spec


class Computation:
    """A named, versioned function of a frozen spec whose results the cache keeps."""

    def __init__(self, fn: Callable[[Any], Any], name: str, version: int, uses: tuple,
                 spec: Callable[[Any], Any] | None):
        self.fn, self.name, self.version, self.uses = fn, name, version, tuple(uses)
        self._spec = spec
        # pickled by name, as the module-level function it replaces (worker processes)
        self.__module__, self.__qualname__ = fn.__module__, fn.__qualname__
        self.__name__, self.__doc__ = fn.__name__, fn.__doc__

    def __reduce__(self) -> str:
        return self.__qualname__

    def __repr__(self) -> str:
        return f"<computation {self.name} v{self.version}>"

    @functools.cached_property
    def _closures(self) -> dict:
        return {}  # the argument's classes -> (code fingerprint, libraries): once per process

    def _closure(self, argument: Any) -> tuple[str, tuple[str, ...]]:
        roots = _classes(argument)
        if roots not in self._closures:
            items = fingerprint.closure(self.fn, deep=True, roots=roots)
            keyed = set(ALWAYS_KEYED) | (fingerprint.libraries(items) & set(COMPUTING_LIBRARIES))
            self._closures[roots] = (fingerprint.fingerprint(*items, *self.uses),
                                     tuple(sorted(keyed)))
        return self._closures[roots]

    @functools.cached_property
    def code(self) -> str:
        """Fingerprint of the function, the memlib code it reaches and the modules it uses
        (without an argument's classes); once per process, so an edit during a run never
        changes its keys."""
        return self._closure(None)[0]

    def spec(self, argument: Any) -> Any:
        return _frozen(argument if self._spec is None else self._spec(argument))

    def keyed(self, argument: Any) -> dict:
        """Everything the entry's key hashes (the cache adds the CPU dispatch): the code by
        its fingerprint, where it runs (a spec without a device computes on the CPU) and the
        versions of the libraries it computes with."""
        spec = self.spec(argument)
        code, libraries = self._closure(argument)
        return {"computation": self.name, "version": self.version, "code": code, "spec": spec,
                "device": sorted(describe_device(d) for d in _devices(spec) or {"cpu"}),
                "libraries": {name: library_version(name) for name in libraries}}

    def path(self, argument: Any) -> Path:
        return cache.entry_path(self.name, self.keyed(argument))

    def key(self, argument: Any) -> str:
        return cache.key(self.keyed(argument))

    def has(self, argument: Any) -> bool:
        """Whether an intact entry holds the result (a damaged one does not), or this run
        keeps it in memory (its entry could not be written)."""
        return cache.available(self.path(argument))

    def load(self, argument: Any) -> Any:
        """The stored result; ValueError when the entry is damaged, OSError when missing."""
        return cache.load(self.path(argument))

    def __call__(self, argument: Any) -> Any:
        """The result for `argument`, computed at most once."""
        return self.get(argument, functools.partial(self.fn, argument))

    def get(self, argument: Any, compute: Callable[[], Any], refresh: bool = False) -> Any:
        """The result for `argument`, computed by `compute` (a closure of the registered
        function) at most once."""
        return cache.cached(self.name, self.keyed(argument), compute, refresh=refresh)


def computation(name: str, version: int, uses: Iterable = (),
                spec: Callable[[Any], Any] | None = None) -> Callable[[Callable], Computation]:
    """Register `fn` (module level, one argument) as the computation `name`; bump `version`
    to re-key its entries when nothing in the code shows why the results change."""
    def register(fn: Callable[[Any], Any]) -> Computation:
        if name in REGISTRY and REGISTRY[name].fn.__qualname__ != fn.__qualname__:
            raise ValueError(f"two computations named {name!r}")
        REGISTRY[name] = Computation(fn, name, version, tuple(uses), spec)
        return REGISTRY[name]
    return register


def inline(name: str, version: int, within: Callable, uses: Iterable = ()) -> Computation:
    """Register the computation `name` whose results come from closures that the study
    function `within` builds (`.get(spec, compute)`), keyed by `within`'s code."""
    return computation(name, version, uses)(within)


Call = tuple[Callable[[Any], Any], Any]  # (a computation or a study function, its argument)


def has(call: Call) -> bool:
    """Whether `call` would compute nothing: a computation's intact entry, or, for a study
    function making several, every entry it reaches (tried with the cache read-only)."""
    function, argument = call
    if isinstance(function, Computation):
        return function.has(argument)
    return not parallel.uncached([call])


def missing(plan: Iterable[Call]) -> list[Call]:
    """The calls of `plan` that would compute something, each once, in order."""
    return [call for call in dict.fromkeys(plan) if not has(call)]


def on_gpu(call: Call) -> bool:
    """Whether `call` computes on a GPU: its spec names a CUDA device (a study function's
    argument, its `device`)."""
    function, argument = call
    if isinstance(function, Computation):
        devices = _devices(function.spec(argument))
    else:
        devices = {str(getattr(argument, "device", "cpu"))}
    return any(d.startswith("cuda") for d in devices)


def compute_missing(plan: Iterable[Call], processes: int | None,
                    desc: str = "runs") -> None:
    """Compute the missing calls of `plan` in `processes` worker processes (one CPU thread
    each; None: as many as `process.workers` gives; nothing where `parallel.can_prefetch`
    says no), or on the Dask cluster MEMLIB_SCHEDULER names (`memlib.cluster`), for the
    caller to load."""
    if cluster.scheduler() and not distributed.active() and not cache.reading_only():
        # on the Dask cluster MEMLIB_SCHEDULER names
        cluster.compute(missing(plan), desc, on_gpu=on_gpu)
    elif parallel.can_prefetch(processes):
        parallel.prefetch(missing(plan), processes, desc)
