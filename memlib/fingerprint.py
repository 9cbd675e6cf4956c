"""Fingerprints of code by what it computes, not how it is written.

A fingerprint hashes the syntax tree of functions, classes and modules with comments,
docstrings, blank lines and line breaks left out, and plain values (constants, preset values)
by a canonical JSON rendering. Rewrapping a comment or a docstring leaves a fingerprint
unchanged; changing an expression, a default or a constant changes it. Cache keys
(what a result is computed by) and the claims register (what decides a verdict) both use it.

The source of an object is read once per process and remembered, so that editing a file
while a run is in progress never changes the fingerprints the run computes with.
"""

from __future__ import annotations

import ast
import dis
import enum
import functools
import hashlib
import inspect
import json
import math
import sys
import textwrap
import types
from collections.abc import Mapping
from typing import Any

_DOCSTRING_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if not isinstance(node, _DOCSTRING_OWNERS):
            continue
        body = node.body
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


def normalized_source(source: str) -> str:
    """The syntax tree of `source` as text: no comments, docstrings or layout."""
    tree = _strip_docstrings(ast.parse(textwrap.dedent(source)))
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def _bytecode(code: types.CodeType) -> str:
    """A lambda's code object: its instructions, names and constants (nested code too), not
    its line numbers. Lambdas have no source of their own to parse (inspect gives the lines
    around them); their bytecode is stable for one Python version."""
    consts = [_bytecode(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return json.dumps([code.co_code.hex(), consts, code.co_names, code.co_varnames])


@functools.cache
def _code_digest(obj: Any) -> str:
    if isinstance(obj, types.FunctionType) and obj.__name__ == "<lambda>":
        return hashlib.sha256(_bytecode(obj.__code__).encode()).hexdigest()
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError) as error:
        raise TypeError(f"no source to fingerprint for {obj!r}") from error
    return hashlib.sha256(normalized_source(source).encode()).hexdigest()


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _in(value: Any, package: str) -> bool:
    return (getattr(value, "__module__", "") or "").split(".")[0] == package


def _methods(cls: type) -> list[Any]:
    """The functions a class defines (static and class methods, property accessors too)."""
    found = []
    for member in vars(cls).values():
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, property):
            found += [f for f in (member.fget, member.fset, member.fdel) if f is not None]
        elif isinstance(member, types.FunctionType):
            found.append(member)
    # generated methods (a dataclass's __init__) have no source: the class's own covers them
    home = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return [f for f in found if f.__code__.co_filename == home]


_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE")
_ATTRIBUTES = ("LOAD_ATTR", "LOAD_METHOD")


def _module_attributes(code: types.CodeType, namespace: dict, package: str,
                       local: dict | None = None) -> list[Any]:
    """The package's functions and classes that `code` (and the code nested in it) reaches
    as `module.name`, through a module of the package it names globally or imports itself."""
    local, found, imported, module = dict(local or {}), [], "", None
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        after = instructions[i + 1] if i + 1 < len(instructions) else None
        if ins.opname == "IMPORT_NAME":
            imported = ins.argval
        elif ins.opname == "IMPORT_FROM" and after is not None and after.opname.startswith(
                "STORE_"):
            value = sys.modules.get(f"{imported}.{ins.argval}")
            if isinstance(value, types.ModuleType):
                local[after.argval] = value
        if ins.opname in _LOADS:
            value = local.get(ins.argval, namespace.get(ins.argval))
            module = value if isinstance(value, types.ModuleType) and (
                value.__name__.split(".")[0] == package) else None
        elif ins.opname in _ATTRIBUTES and module is not None:
            value = getattr(module, ins.argval, None)
            module = value if isinstance(value, types.ModuleType) else None
            if isinstance(value, (types.FunctionType, type)) and _in(value, package):
                found.append(value)
        else:
            module = None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _module_attributes(const, namespace, package, local)
    return found


def _named(value: Any, package: str, todo: list) -> Any:
    """A container constant as plain data, the package's functions and classes in it by name
    (and queued to follow); None when it holds anything else."""
    if isinstance(value, (types.FunctionType, type)) and _in(value, package):
        todo.append(value)
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, Mapping):
        items = {str(k): _named(v, package, todo) for k, v in value.items()}
        return None if None in items.values() else items
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_named(v, package, todo) for v in value]
        if None in items:
            return None
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return None


def _global_loads(code: types.CodeType) -> set[str]:
    """The global names `code` (and the code nested in it) reads: not attribute names."""
    names = {ins.argval for ins in dis.get_instructions(code)
             if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_loads(const)
    return names


def _constant_name(name: str) -> bool:
    """Whether a module-level container is a constant table (named as one: UPPER_CASE, public)
    rather than the process's running state (`_WARNED`, `ledger`), which changes as the
    process runs and so must never enter a fingerprint."""
    return name.isupper() and not name.startswith("_")


def closure(fn: Any, package: str = "memlib", deep: bool = False) -> list[Any]:
    """`fn` and, transitively, the globals it names that decide what it computes: functions
    and classes defined in `package`, and plain constants (numbers, strings, tuples...) of
    their modules. Library functions and modules are left out (their versions are recorded
    elsewhere). Unless `deep`, attributes reached through a module (`rlp.measure`) are not
    followed, so a caller lists those itself. `deep` reads only the global names the code
    loads (not an attribute that shares a global's name), and follows attributes (through the
    package's modules a function names or imports), the methods of classes, and the
    package's functions in dict, list and set constants (public UPPER_CASE names; other
    module-level containers are running state), which it keeps as values: what a cache key
    needs."""
    seen: dict[int, Any] = {}
    todo = [inspect.unwrap(fn)]
    while todo:
        obj = inspect.unwrap(todo.pop())
        if id(obj) in seen:
            continue
        seen[id(obj)] = obj
        if deep and isinstance(obj, type):
            todo += _methods(obj)
        code = getattr(obj, "__code__", None)
        if code is None:
            continue
        if deep:
            todo += _module_attributes(code, obj.__globals__, package)
        for name in sorted(_global_loads(code) if deep else _global_names(code)):
            value = obj.__globals__.get(name)
            if isinstance(value, (types.FunctionType, type)):
                if _in(value, package):
                    todo.append(value)
            elif isinstance(value, (bool, int, float, str, tuple, frozenset)) and value is not None:
                seen[id(value)] = (f"{obj.__module__}.{name}", value)
            elif deep and isinstance(value, (Mapping, list, set)) and _constant_name(name):
                plain = _named(value, package, todo)
                if plain is not None:
                    seen[id(value)] = (f"{obj.__module__}.{name}", plain)
    return list(seen.values())


def _is_code(obj: Any) -> bool:
    return isinstance(obj, (types.ModuleType, types.FunctionType, type)) or (
        isinstance(obj, functools.partial))


def _plain(value: Any) -> Any:
    """A JSON-ready rendering of a plain value (dataclasses, enums, paths, floats exactly)."""
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        return {"__dataclass__": type(value).__qualname__,
                **{k: _plain(getattr(value, k)) for k in value.__dataclass_fields__}}
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else float.hex(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return repr(value)


def part(obj: Any) -> str:
    """Fingerprint of one object: code by its syntax tree, anything else by its value."""
    if isinstance(obj, functools.partial):
        return hashlib.sha256((part(obj.func) + part(list(obj.args))
                               + part(dict(obj.keywords))).encode()).hexdigest()
    if _is_code(obj):
        return _code_digest(inspect.unwrap(obj) if callable(obj) else obj)
    text = json.dumps(_plain(obj), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint(*objects: Any, length: int = 16) -> str:
    """One fingerprint over `objects` in order (functions, classes, modules, values)."""
    h = hashlib.sha256()
    for obj in objects:
        h.update(part(obj).encode())
    return h.hexdigest()[:length]
