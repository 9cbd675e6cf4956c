"""Fingerprints of code by what it computes, not how it is written.

A fingerprint hashes the syntax tree of functions, classes and modules with comments,
docstrings, type annotations, blank lines and line breaks left out, and plain values
(constants, preset values) by a canonical JSON rendering. Rewrapping a comment or a docstring,
or a typing-only edit, leaves a fingerprint unchanged; changing an expression, a default or a
constant changes it. Cache keys (what a result is computed by) and the claims register (what
decides a verdict) both use it.

The source of memlib's own modules is read when memlib is imported (`capture`), every file
at once, and never again: a notebook kernel that imported memlib and then sees an edited file
still fingerprints the code it runs, and a run in progress keys by what it started with.
Lambdas, which have no source of their own, are fingerprinted by their bytecode: memlib
supports one Python minor version (pyproject's requires-python), whose bytecode this reads.
"""

from __future__ import annotations

import ast
import copy
import dis
import enum
import functools
import hashlib
import importlib
import inspect
import json
import math
import sys
import textwrap
import types
import typing
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

_DOCSTRING_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
# memlib's modules that store, key and schedule results, never compute them: the cache (and
# the checkpoint files training writes through it, which resume a run bit for bit), the
# registry, fingerprints, the process's bookkeeping, the folders and the worker pool. A
# closure does not follow into them, so a change to how an entry or a checkpoint is stored
# re-keys nothing (tests/test_trace.py checks that nothing else goes unkeyed).
MACHINERY = ("memlib.cache", "memlib.runs", "memlib.fingerprint", "memlib.process",
             "memlib.paths", "memlib.parallel")
_SOURCES: dict[str, str] = {}  # file -> its text, as read once (at `capture`, or first use)


def capture(folder: str | Path) -> None:
    """Read every module's source under `folder` now, once: what the package's fingerprints
    are computed from for the rest of the process."""
    for path in sorted(Path(folder).rglob("*.py")):
        _SOURCES.setdefault(str(path), path.read_text(encoding="utf-8"))


def sources() -> dict[str, str]:
    """The sources this process fingerprints by, for a worker process to `adopt`."""
    return dict(_SOURCES)


def adopt(captured: dict[str, str]) -> None:
    """Fingerprint by `captured` (the parent's sources): a worker started after a file was
    edited keys its results as the parent that loads them does."""
    _SOURCES.update(captured)
    _tree.cache_clear()
    _code_digest.cache_clear()


def _source_of(filename: str) -> str:
    if filename not in _SOURCES:
        try:
            _SOURCES[filename] = Path(filename).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise TypeError(f"no source to fingerprint in {filename}") from error
    return _SOURCES[filename]


@functools.cache
def _tree(filename: str) -> ast.Module:
    return ast.parse(_source_of(filename))


class _Normalise(ast.NodeTransformer):
    """Leaves out docstrings and type annotations: neither changes what code computes (a
    class-level annotation without a value still declares a dataclass field, so the field
    stays, its type does not)."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        if isinstance(node, _DOCSTRING_OWNERS):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        if isinstance(node, ast.arg):
            node.annotation = None
        if isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
        return node


def _dump(tree: ast.AST) -> str:
    return ast.dump(_Normalise().visit(tree), annotate_fields=False, include_attributes=False)


def normalized_source(source: str) -> str:
    """The syntax tree of `source` as text: no comments, docstrings, annotations or layout."""
    return _dump(ast.parse(textwrap.dedent(source)))


def _bytecode(code: types.CodeType) -> str:
    """A lambda's code object: its instructions, names and constants (nested code too), not
    its line numbers. Lambdas have no source of their own to parse (inspect gives the lines
    around them); their bytecode is stable for one Python version."""
    consts = [_bytecode(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return json.dumps([code.co_code.hex(), consts, code.co_names, code.co_varnames])


def _function_node(code: types.CodeType) -> ast.AST:
    """The definition whose code `code` is, found by its first line (decorators included)."""
    for node in ast.walk(_tree(code.co_filename)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if first == code.co_firstlineno:
                return node
    raise TypeError(f"no source to fingerprint for {code.co_name} in {code.co_filename}")


def _class_node(cls: type) -> ast.AST:
    """The class statement of `cls`, found by its qualified name in its module's file."""
    filename = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if filename is None:
        raise TypeError(f"no source to fingerprint for {cls!r}")
    nodes: list[ast.AST] = [_tree(filename)]
    for name in cls.__qualname__.split("."):
        if name == "<locals>":
            nodes = [n for parent in nodes for n in ast.walk(parent)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            continue
        nodes = [n for parent in nodes for n in ast.iter_child_nodes(parent)
                 if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == name]
    classes = [n for n in nodes if isinstance(n, ast.ClassDef)]
    if len(classes) != 1:
        raise TypeError(f"no source to fingerprint for {cls!r}")
    return classes[0]


@functools.cache
def _code_digest(obj: Any) -> str:
    if isinstance(obj, types.FunctionType) and obj.__name__ == "<lambda>":
        return hashlib.sha256(_bytecode(obj.__code__).encode()).hexdigest()
    if isinstance(obj, types.ModuleType):
        if getattr(obj, "__file__", None) is None:
            raise TypeError(f"no source to fingerprint for {obj!r}")
        tree: ast.AST = ast.parse(_source_of(obj.__file__))
    elif isinstance(obj, types.FunctionType):
        tree = _function_node(obj.__code__)
    elif isinstance(obj, type):
        tree = _class_node(obj)
    else:
        raise TypeError(f"no source to fingerprint for {obj!r}")
    return hashlib.sha256(_dump(copy.deepcopy(tree)).encode()).hexdigest()


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _in(value: Any, package: str) -> bool:
    return (getattr(value, "__module__", "") or "").split(".")[0] == package


def _methods(cls: type) -> list[Any]:
    """The functions a class defines (static and class methods, property and cached-property
    accessors too)."""
    found = []
    for member in vars(cls).values():
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, functools.cached_property):
            member = member.func
        if isinstance(member, property):
            found += [f for f in (member.fget, member.fset, member.fdel) if f is not None]
        elif isinstance(member, types.FunctionType):
            found.append(member)
    # generated methods (a dataclass's __init__) have no source: the class's own covers them
    home = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return [f for f in found if f.__code__.co_filename == home]


def library_name(value: Any) -> str:
    """A library object by its qualified name (`torch.square` -> "torch._Variable...square",
    `torch.nn.functional` -> "module torch.nn.functional"): what decides which library code
    runs, whatever the version (versions enter a key separately)."""
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    module = getattr(value, "__module__", None) or type(value).__module__
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if qualname is not None and (callable(value) or isinstance(value, type)):
        return f"{module}.{qualname}"
    text = repr(value)
    return text if " at 0x" not in text else f"{type(value).__module__}.{type(value).__qualname__}"


def _library(value: Any, package: str) -> bool:
    """Whether `value` is code from outside `package` (a module, function or class)."""
    if isinstance(value, types.ModuleType):
        return value.__name__.split(".")[0] != package
    return callable(value) and not _in(value, package)


def top_package(value: Any) -> str:
    """The top-level package a library object comes from ("torch")."""
    name = value.__name__ if isinstance(value, types.ModuleType) else (
        getattr(value, "__module__", None) or type(value).__module__)
    return name.split(".")[0]


_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE")
_ATTRIBUTES = ("LOAD_ATTR", "LOAD_METHOD")
Reference = tuple[str, str, Any]  # (the module it is named in, the name, the value)


def _package_module(name: str, package: str) -> types.ModuleType | None:
    """The package's module `name`, imported if it was not yet (imports inside functions)."""
    if name.split(".")[0] != package:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _imports(code: types.CodeType, package: str, local: dict) -> list[Reference]:
    """What the import statements in `code` bind: the package's functions, classes and
    constants (followed), and the libraries they name."""
    found: list[Reference] = []
    instructions = list(dis.get_instructions(code))
    imported, fromlist = "", None
    for i, ins in enumerate(instructions):
        after = instructions[i + 1] if i + 1 < len(instructions) else None
        stores = after is not None and after.opname.startswith("STORE_")
        if ins.opname == "IMPORT_NAME":
            imported = ins.argval
            before = instructions[i - 1] if i else None
            fromlist = before.argval if before is not None and before.opname == "LOAD_CONST" \
                else None
            if imported.split(".")[0] != package:
                found.append((code.co_name, f"import {imported}",
                              sys.modules.get(imported) or types.ModuleType(imported)))
            if stores:  # `import a.b` binds a, `import a.b as c` binds a.b
                module = _package_module(imported.split(".")[0] if not fromlist else imported,
                                         package)
                if module is not None:
                    local[after.argval] = module
        elif ins.opname == "IMPORT_FROM" and stores:
            module = _package_module(imported, package)
            value = getattr(module, ins.argval, None) if module is not None else None
            if value is None and module is not None:
                value = _package_module(f"{imported}.{ins.argval}", package)
            if isinstance(value, types.ModuleType):
                local[after.argval] = value
            elif module is not None:
                found.append((imported, ins.argval, value))
            else:
                found.append((code.co_name, f"{imported}.{ins.argval}",
                              types.ModuleType(imported)))
    return found


def _module_attributes(code: types.CodeType, namespace: dict, package: str,
                       local: dict | None = None) -> list[Reference]:
    """What `code` (and the code nested in it) reaches as `module.name`, through a module of
    the package it names globally or imports itself, and what its imports bind."""
    local = dict(local or {})
    found = _imports(code, package, local)
    module = None
    for ins in dis.get_instructions(code):
        if ins.opname in _LOADS:
            value = local.get(ins.argval, namespace.get(ins.argval))
            module = value if isinstance(value, types.ModuleType) and (
                value.__name__.split(".")[0] == package) else None
        elif ins.opname in _ATTRIBUTES and module is not None:
            value = getattr(module, ins.argval, None)
            if value is None:
                value = _package_module(f"{module.__name__}.{ins.argval}", package)
            found.append((module.__name__, ins.argval, value))
            module = value if isinstance(value, types.ModuleType) else None
        else:
            module = None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _module_attributes(const, namespace, package, local)
    return found


def _named(value: Any, package: str, todo: list) -> Any:
    """A constant as plain data: the package's functions and classes in it by name (and
    queued to follow), a library's by qualified name, dataclass instances by their fields."""
    if isinstance(value, (types.FunctionType, type)) and _in(value, package):
        todo.append(value)
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, functools.partial):
        return [_named(value.func, package, todo), _named(list(value.args), package, todo),
                _named(dict(value.keywords), package, todo)]
    if _library(value, package):
        return library_name(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        return {"__dataclass__": type(value).__qualname__,
                **{k: _named(getattr(value, k), package, todo)
                   for k in value.__dataclass_fields__}}
    if isinstance(value, Mapping):
        return {str(k): _named(v, package, todo) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_named(v, package, todo) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    return library_name(value)


def _global_loads(code: types.CodeType) -> set[str]:
    """The global names `code` (and the code nested in it) reads: not attribute names."""
    names = {ins.argval for ins in dis.get_instructions(code)
             if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_loads(const)
    return names


def _class_names(cls: type) -> set[str]:
    """The names a class statement reads (its bases, field defaults, decorators)."""
    return {node.id for node in ast.walk(_class_node(cls))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def _annotated_classes(fn: Any, package: str) -> list[type]:
    """The package's classes that `fn`'s parameters and result are annotated with: a config's
    methods and properties (`config.seed`) run when the function reads them. Annotations do
    not count as code (they are left out of the syntax tree), the classes they name do."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve names nothing
        return []
    found, todo = [], list(hints.values())
    while todo:
        hint = todo.pop()
        if isinstance(hint, type) and _in(hint, package):
            found.append(hint)
        todo += list(typing.get_args(hint))
    return found


def _constant_name(name: str) -> bool:
    """Whether a module-level container is a constant table (named as one: UPPER_CASE, public)
    rather than the process's running state (`_WARNED`, `ledger`), which changes as the
    process runs and so must never enter a fingerprint."""
    return name.isupper() and not name.startswith("_")


_SCALARS = (bool, int, float, str, bytes, tuple, frozenset, enum.Enum)


def closure(fn: Any, package: str = "memlib", deep: bool = False,
            roots: tuple = ()) -> list[Any]:
    """`fn` (and `roots`) and, transitively, the globals they name that decide what they
    compute: functions and classes defined in `package` (as code), constants of its modules
    (as (module.name, value), one entry per name: two names holding equal values are two
    entries), and library modules, functions and classes (as (module.name, "library", their
    qualified name): `torch.square` named in a table is not `torch.abs`). Unless `deep`,
    attributes reached through a module (`rlp.measure`) are not followed, so a caller lists
    those itself. `deep` reads only the global names the code loads (not an attribute that
    shares a global's name), and follows attributes (through the package's modules a function
    names or imports, inside functions too), what imports inside a function bind, the methods,
    properties and class-body names of classes, default argument values, and the package's
    functions in dict, list and set constants (public UPPER_CASE names; other module-level
    containers are running state), which it keeps as values: what a cache key needs."""
    visited: set[int] = set()
    code_items: dict[tuple, Any] = {}
    values: dict[str, Any] = {}
    todo = [inspect.unwrap(f) for f in (fn, *roots)]

    def reference(module: str, name: str, value: Any, table: bool) -> None:
        label = f"{module}.{name}"
        if callable(value) and hasattr(value, "__wrapped__"):  # functools.cache, lru_cache
            value = inspect.unwrap(value)
        if isinstance(value, (types.FunctionType, type)) and _in(value, package):
            if value.__module__ not in MACHINERY:
                todo.append(value)
        elif isinstance(value, types.ModuleType) and not _library(value, package):
            return
        elif isinstance(value, PurePath):  # where this checkout is, not what computes
            return
        elif isinstance(value, functools.partial):
            values[label] = (label, _named(value, package, todo))
        elif _library(value, package):
            values[label] = (label, "library", library_name(value))
        elif isinstance(value, _SCALARS):
            values[label] = (label, _named(value, package, todo) if deep else value)
        elif deep and table and value is not None:
            values[label] = (label, _named(value, package, todo))

    while todo:
        obj = inspect.unwrap(todo.pop())
        if id(obj) in visited:
            continue
        visited.add(id(obj))
        code_items[(getattr(obj, "__module__", "") or "", getattr(obj, "__qualname__", ""),
                    id(obj))] = obj
        if deep and isinstance(obj, type):
            todo += _methods(obj)
            todo += [base for base in obj.__bases__ if _in(base, package)]
            namespace = vars(sys.modules[obj.__module__])
            for name in sorted(_class_names(obj)):
                if name in namespace:
                    reference(obj.__module__, name, namespace[name], _constant_name(name))
        code = getattr(obj, "__code__", None)
        if code is None:
            continue
        if deep:
            todo += _annotated_classes(obj, package)
            for module, name, value in _module_attributes(code, obj.__globals__, package):
                reference(module, name, value, _constant_name(name))
            for i, default in enumerate((*(obj.__defaults__ or ()),
                                         *(obj.__kwdefaults__ or {}).values())):
                reference(f"{obj.__module__}.{obj.__qualname__}", f"default {i}", default, True)
        for name in sorted(_global_loads(code) if deep else _global_names(code)):
            if name in obj.__globals__:
                reference(obj.__module__, name, obj.__globals__[name], _constant_name(name))
    ordered = [code_items[k] for k in sorted(code_items, key=lambda k: (k[0], k[1]))]
    return ordered + [values[label] for label in sorted(values)]


def libraries(items: list[Any]) -> set[str]:
    """The top-level libraries a closure names or imports ("torch", "timm")."""
    found = set()
    for item in items:
        if isinstance(item, tuple) and len(item) == 3 and item[1] == "library":
            name = item[2].removeprefix("module ").split(".")[0]
            found.add(name)
    return found


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
