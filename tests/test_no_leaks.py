"""The published project speaks of itself only: no word of the tracker it was built with."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ["notebooks", "memlib", "params", "pilots", "benchmarks", "figures", "book",
             "README.md", "ARCHITECTURE.md"]
LEAK = re.compile(r"\bissues?\s*#?\s*\d+\b|\bthe issue\b|\btickets?\b", re.IGNORECASE)
BINARY = {".png", ".pdf", ".pyc", ".pt", ".gz", ".npz", ".so"}


def published_texts():
    """Every text file under the published folders (binary files and caches skipped)."""
    for name in PUBLISHED:
        path = ROOT / name
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if file.suffix in BINARY or "__pycache__" in file.parts:
                continue
            try:
                yield file, file.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


def leaks(text: str) -> list[tuple[int, str]]:
    """(line number, matched words) of every leak in `text`."""
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1)
            for m in LEAK.finditer(line)]


def test_the_pattern_catches_the_words_and_spares_ordinary_prose():
    text = "fixed in issue 11\nas in the Issue\nsee #4, a Ticket\nissues #7\nan issue of width"
    assert leaks(text) == [(1, "issue 11"), (2, "the Issue"), (3, "Ticket"), (4, "issues #7")]


def test_published_files_name_no_issue_or_ticket():
    found = [f"{file.relative_to(ROOT)}:{n}: {word!r}"
             for file, text in published_texts() for n, word in leaks(text)]
    assert not found, "words that do not belong in the published project:\n" + "\n".join(found)
