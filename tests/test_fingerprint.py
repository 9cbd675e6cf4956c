"""Fingerprints follow what code computes: layout, comments and docstrings never change them."""

import math
import types

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
