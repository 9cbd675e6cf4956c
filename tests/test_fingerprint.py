"""Fingerprints follow what code computes: layout, comments and docstrings never change them."""

import math
import types
from pathlib import Path

import pytest

from memlib import fingerprint as fp


def _module(name, source):
    """A module whose functions have a source file, as a real one's do."""
    import importlib.util
    import sys
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


BASE = '''
LIMIT = 3


def step(x):
    """Add one."""
    return x + 1  # a comment
'''


def test_comments_docstrings_and_layout_leave_the_fingerprint_unchanged():
    a = _module("fp_a", BASE)
    b = _module("fp_b", BASE.replace('"""Add one."""', '"""Add one,\n    rewrapped."""')
                .replace("# a comment", "# another comment") + "\n\n# trailing note\n")
    assert fp.fingerprint(a.step) == fp.fingerprint(b.step)
    assert fp.fingerprint(a) == fp.fingerprint(b)


def test_a_changed_expression_or_constant_changes_the_fingerprint():
    a = _module("fp_c", BASE)
    b = _module("fp_d", BASE.replace("x + 1", "x + 2"))
    c = _module("fp_e", BASE.replace("LIMIT = 3", "LIMIT = 4"))
    assert fp.fingerprint(a.step) != fp.fingerprint(b.step)
    assert fp.fingerprint(a) != fp.fingerprint(c)
    assert fp.fingerprint(a.step) == fp.fingerprint(c.step)


def test_values_are_fingerprinted_exactly_and_in_order():
    assert fp.fingerprint(0.1) != fp.fingerprint(math.nextafter(0.1, 1))
    assert fp.fingerprint({"a": 1, "b": 2}) == fp.fingerprint({"b": 2, "a": 1})
    assert fp.fingerprint(1, 2) != fp.fingerprint(2, 1)
    assert fp.fingerprint([1, 2]) != fp.fingerprint([1, 3])


def test_an_object_without_source_is_refused():
    with pytest.raises(TypeError, match="no source"):
        fp.fingerprint(types.ModuleType("empty"))


def test_a_lambda_is_fingerprinted_by_its_code():
    a = _module("fp_f", "RULE = lambda v: v > 3\nOTHER = lambda v: v > 4\n")
    b = _module("fp_g", "# moved\n\nRULE = lambda v: v > 3\n")
    assert fp.fingerprint(a.RULE) == fp.fingerprint(b.RULE)
    assert fp.fingerprint(a.RULE) != fp.fingerprint(a.OTHER)


def test_the_closure_follows_the_functions_and_constants_a_function_names():
    src = ("TARGET = 10.0\n\n\ndef helper(x):\n    return x - TARGET\n\n\n"
           "def rule(v):\n    return helper(v) > 0\n")
    a = _module("memlib_fp_h", src)
    b = _module("memlib_fp_i", src.replace("TARGET = 10.0", "TARGET = 5.0"))
    c = _module("memlib_fp_j", src.replace("x - TARGET", "x - 2 * TARGET"))
    for m in (a, b, c):
        m.rule.__module__ = m.helper.__module__ = "memlib.fake"
    key = lambda m: fp.fingerprint(*fp.closure(m.rule))
    assert key(a) != key(b) and key(a) != key(c)
    assert len(fp.closure(a.rule)) == 3


def test_running_state_stays_out_of_a_fingerprint_and_constant_tables_in():
    src = ("TABLE = {'a': 1.0}\n_SEEN = set()\nledger = {}\n\n\n"
           "def helper(x):\n    _SEEN.add(x)\n    ledger[x] = 1\n    return TABLE['a'] + x\n")
    a = _module("memlib_fp_state_a", src)
    b = _module("memlib_fp_state_b", src.replace("'a': 1.0", "'a': 2.0"))
    for m in (a, b):
        m.helper.__module__ = "memlib.fake"
    key = lambda m: fp.fingerprint(*fp.closure(m.helper, deep=True))
    before = key(a)
    a.helper(3)  # the process runs: its state changes, its code and constants do not
    assert key(a) == before
    assert key(b) != before


def _deep(m, fn="f"):
    for value in vars(m).values():
        if isinstance(value, types.FunctionType):
            value.__module__ = "memlib.fake"
    return fp.fingerprint(*fp.closure(getattr(m, fn), deep=True))


def test_library_functions_in_a_table_are_named():
    src = "import math\nTABLE = {'f': math.sqrt}\n\n\ndef f(x):\n    return TABLE['f'](x)\n"
    a = _module("memlib_fp_lib_a", src)
    b = _module("memlib_fp_lib_b", src.replace("math.sqrt", "math.exp"))
    c = _module("memlib_fp_lib_c", src)
    assert _deep(a) != _deep(b) and _deep(a) == _deep(c)


def test_constants_are_keyed_by_name_not_by_value():
    src = "A = 1\nB = 2\n\n\ndef f(x):\n    return x + A + B\n"
    a = _module("memlib_fp_const_a", src)
    b = _module("memlib_fp_const_b", src.replace("B = 2", "B = 1"))  # now equal to A
    assert _deep(a) != _deep(b)
    assert len([i for i in fp.closure(b.f, deep=True) if isinstance(i, tuple)]) == 2


def test_annotations_do_not_count():
    a = _module("fp_ann_a", "def f(x: int) -> int:\n    y: int = x\n    return y\n")
    b = _module("fp_ann_b", "def f(x: 'float') -> list:\n    y: str = x\n    return y\n")
    c = _module("fp_ann_c", "def f(x: int) -> int:\n    y: int = x + 1\n    return y\n")
    assert fp.fingerprint(a.f) == fp.fingerprint(b.f) != fp.fingerprint(c.f)


def test_imports_inside_functions_are_followed():
    from memlib import seed

    src = "def f():\n    from memlib.seed import seed_everything\n    return seed_everything\n"
    m = _module("memlib_fp_import", src)
    m.f.__module__ = "memlib.fake"
    assert seed.seed_everything in fp.closure(m.f, deep=True)
    assert seed.seed_everything not in fp.closure(m.f)  # only the deep closure follows


def test_source_is_what_was_read_when_memlib_was_imported(tmp_path):
    import memlib

    path = Path(memlib.__file__).parent / "seed.py"
    assert str(path) in fp._SOURCES  # read at import, not on first use
    m = _module("fp_captured", "def f():\n    return 1\n")
    before = fp.fingerprint(m.f)
    Path(m.f.__code__.co_filename).write_text("def f():\n    return 2\n")
    fp._code_digest.cache_clear()
    assert fp.fingerprint(m.f) == before  # the text first read stays what is keyed
