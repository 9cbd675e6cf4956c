"""Every text file memlib reads or writes is UTF-8, whatever the locale: under LC_ALL=C (ASCII)
a read or write without `encoding=` fails on the first non-ASCII character (a λ in a table, a
≈ in a notebook), after the run it was to publish."""

from __future__ import annotations

import ast
from pathlib import Path

MEMLIB = Path(__file__).resolve().parent.parent / "memlib"
TESTS = Path(__file__).resolve().parent
NOT_TEXT = ("tarfile.", "Image.open", "os.open", "os.fdopen", "_open(")  # archives, images, fds


def text_io_without_encoding(source: str) -> list[str]:
    """The calls of open, read_text and write_text in `source` that leave the encoding to
    the locale (binary modes and non-file opens aside)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        name = method or getattr(node.func, "id", None)
        call = ast.get_source_segment(source, node) or ""
        binary = any(isinstance(a, ast.Constant) and isinstance(a.value, str) and "b" in a.value
                     for a in [*node.args, *(k.value for k in node.keywords if k.arg == "mode")])
        if ((method in ("read_text", "write_text") or name == "open")
                and not any(k.arg == "encoding" for k in node.keywords)
                and not binary and not any(n in call for n in NOT_TEXT)):
            found.append(f"line {node.lineno}: {call.splitlines()[0]}")
    return found


def test_the_check_finds_a_read_that_leaves_the_encoding_to_the_locale():
    assert text_io_without_encoding("Path('x').read_text()\nopen(p, 'w')\n") != []
    assert text_io_without_encoding("Path('x').read_text(encoding='utf-8')\n"
                                    "open(p, 'wb')\n") == []


def test_memlib_reads_and_writes_text_as_utf8():
    # the Fisher kernel's C source and digests are written and read by their own module
    skipped = {MEMLIB / "studies" / "fisher" / "method.py"}
    found = {str(path.relative_to(MEMLIB)): calls for path in sorted(MEMLIB.rglob("*.py"))
             if path not in skipped
             and (calls := text_io_without_encoding(path.read_text(encoding="utf-8")))}
    assert found == {}


def test_the_tests_helpers_read_and_write_text_as_utf8():
    """The helpers that run beside memlib (in notebook kernels, worker processes, the book
    checker) are held to memlib's rule; the test modules' own fixture files are not."""
    helpers = [p for p in sorted(TESTS.rglob("*.py")) if not p.name.startswith("test_")]
    found = {str(path.relative_to(TESTS)): calls for path in helpers
             if (calls := text_io_without_encoding(path.read_text(encoding="utf-8")))}
    assert found == {}
