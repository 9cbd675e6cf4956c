"""Tables: CSV is the truth, Markdown is for reading."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from memlib import DEFAULT_SCALE, paths
from memlib.process import atomic_write_bytes


def to_markdown(df: pd.DataFrame, floatfmt: str = ".4g", readable: bool = False) -> str:
    """`df` as a Markdown table; a "|" inside a cell is escaped, so it stays in its column.
    `readable`: every row as `readable_row` shows it (long cells folded, numbers never
    measured named so), for a table of sentences rather than of numbers."""
    escaped = df.copy()
    for column in escaped.columns:
        if any(isinstance(v, str) for v in escaped[column]):
            escaped[column] = [v.replace("|", "\\|") if isinstance(v, str) else v
                               for v in escaped[column]]
    escaped.columns = [str(c).replace("|", "\\|") for c in escaped.columns]
    text = escaped.to_markdown(index=False, floatfmt=floatfmt)
    if readable:  # rows unpadded, so the separator's padding goes too
        header, separator, *rows = text.split("\n")
        text = "\n".join([readable_row(header), re.sub("-+", "---", separator),
                          *map(readable_row, rows)])
    return text + "\n"


def save_table(df: pd.DataFrame, name: str, study: str, scale: str = DEFAULT_SCALE,
               readable: bool = False) -> tuple[Path, Path]:
    """Write <figures>/<study>/<name>.csv and .md atomically; return both paths. The CSV
    keeps every value as it is; `readable` as `to_markdown` takes it, for the .md only."""
    directory = paths.figures_dir(study, scale)
    csv, md = directory / f"{name}.csv", directory / f"{name}.md"
    atomic_write_bytes(csv, df.to_csv(index=False).encode())
    atomic_write_bytes(md, to_markdown(df, readable=readable).encode())
    return csv, md


def _as_list(value):
    """A list cell (a list, a tuple, or its CSV text "[0.1, 0.2]") as a list, else None."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:
            return [float(v) for v in value[1:-1].split(",") if v.strip()]
        except ValueError:
            return None
    return None


def first_and_last(df: pd.DataFrame, first: str = "first", last: str = "last") -> pd.DataFrame:
    """`df` with each column whose cells are lists (per layer, say) replaced by two columns,
    "<column> (<first>)" and "<column> (<last>)": a cell of a table for reading holds one
    value, never a list that wraps one character per line."""
    out = pd.DataFrame(index=df.index)
    for column in df.columns:
        lists = [_as_list(v) for v in df[column]]
        if any(v for v in lists) and all(v is not None or pd.isna(c)
                                         for v, c in zip(lists, df[column], strict=True)):
            out[f"{column} ({first})"] = [v[0] if v else None for v in lists]
            out[f"{column} ({last})"] = [v[-1] if v else None for v in lists]
        else:
            out[column] = df[column]
    return out.reset_index(drop=True)


CELL_LIMIT = 200  # characters of a table cell a reader sees before it folds


def _cut(text: str, limit: int) -> int:
    """The last space before `limit` outside brackets, HTML tags and code spans, else 0."""
    depth, code, cut = 0, False, 0
    for i, char in enumerate(text[:limit]):
        if char == "`":
            code = not code
        elif char in "([<":
            depth += 1
        elif char in ")]>":
            depth = max(0, depth - 1)
        elif char == " " and not depth and not code:
            cut = i
    return cut


def fold(text: str, limit: int = CELL_LIMIT) -> str:
    """A Markdown table cell shown in at most `limit` characters: a longer one keeps its
    opening words and folds the rest behind them (<details>), never cutting a link, a tag or
    a code span in two."""
    text = str(text)
    if text.startswith("<details><summary>") and text.endswith("</details>"):
        return text  # folded already: a report folded where it is written, shown again
    cut = _cut(text, limit - 20)
    if len(text) <= limit or not cut:
        return text
    return (f"<details><summary>{text[:cut]} <i>(more)</i></summary>{text[cut + 1:]}"
            "</details>")


UNMEASURED = "not measured"


# an estimate without a value (no values at all, or one that gives none), its interval too
NO_VALUES = re.compile(r"(?<![\w.])nan(?: \[nan, nan\])?(?: \(n=\d+\)|(?!\w|\.\w))")
NO_VALUE = "—"  # a value a run has none of (no onset, no flipped labels), where Python says None
PYTHON_NONE = re.compile(r"(?<![\w-])None(?=\s*(?:[,;)\]]|$))")


def flat(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` as a reader's table: its index (a groupby's keys, a filter's row numbers) as
    ordinary columns where it names something and dropped where it only counts rows; nested
    column names joined into one ("test_acc mean"); every value as text (`cell`)."""
    out = frame.copy()
    if isinstance(out.columns, pd.MultiIndex):
        out.columns = [" ".join(str(p) for p in parts if str(p)) for parts in out.columns]
    else:
        out.columns = [str(c) for c in out.columns]
    named = any(name is not None for name in out.index.names)
    out = out.reset_index(drop=not named)
    if named and isinstance(frame.index, pd.MultiIndex):  # a group's key once, not per row
        keys = [str(n) for n in frame.index.names]
        for i in range(len(keys) - 1, 0, -1):
            repeated = (out[keys[:i]] == out[keys[:i]].shift()).all(axis=1)
            out[keys[i - 1]] = out[keys[i - 1]].astype(object).where(~repeated, "")
    return out.map(cell)


def cell(value) -> str:
    """One value as a reader's table shows it: a number to four significant digits, a
    missing one a dash, a truth value yes or no, text as `measured` says it."""
    if isinstance(value, str):
        return measured(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NO_VALUE
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return format(float(value), ".4g")
    return str(value)


def tables_as_markdown() -> None:
    """In an IPython kernel, show every DataFrame as a Markdown table (`flat`), as the book's
    other tables read: no pandas index, no NaN or None, no nested header; elsewhere nothing
    to do."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return

    def markdown(frame: pd.DataFrame) -> str:
        return to_markdown(flat(frame))

    formatters = shell.display_formatter.formatters
    formatters["text/markdown"].for_type(pd.DataFrame, markdown)
    formatters["text/html"].for_type(pd.DataFrame, lambda frame: None)  # Markdown, not HTML
    formatters["text/plain"].for_type(
        pd.DataFrame, lambda frame, printer, cycle: printer.text(markdown(frame)))


def measured(value: str) -> str:
    """A number as a table or a sentence shows it: one that was never measured ("nan",
    "nan (n=0)", also inside a list of values) reads as such instead of as a value, and a
    value a run has none of (Python's None, alone or in a list) as a dash."""
    text = str(value).strip()
    if text == "nan" or text.startswith("nan ("):
        return UNMEASURED
    return PYTHON_NONE.sub(NO_VALUE, NO_VALUES.sub(UNMEASURED, str(value)))


def readable_row(line: str, limit: int = CELL_LIMIT) -> str:
    """A Markdown table row with every cell readable: unmeasured numbers named, long cells
    folded (`fold`); a separator row or any other line is left as it is."""
    if not line.startswith("|") or set(line) <= set("|-: "):
        return line
    cells = re.split(r"(?<!\\)\|", line)[1:-1]
    shown = [fold(measured(c.strip()), limit) if c.strip() else "" for c in cells]
    return "| " + " | ".join(shown) + " |"
