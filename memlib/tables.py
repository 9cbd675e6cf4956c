"""Tables: CSV is the truth, Markdown is for reading."""

from __future__ import annotations

import re
from pathlib import Path

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


def dash_missing_values() -> None:
    """In an IPython kernel, show every DataFrame's missing values (NaN, None) as a dash, as
    the book and the claims tables do, instead of pandas's raw NaN and None; elsewhere
    nothing to do."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return

    def readable(frame: pd.DataFrame) -> pd.DataFrame:
        """Text cells as measured() says them ("None" a dash, "nan (n=1)" not measured)."""
        return frame.map(lambda v: measured(v) if isinstance(v, str) else
                         NO_VALUE if v is None else v)

    def html(frame: pd.DataFrame) -> str:
        return readable(frame).to_html(na_rep=NO_VALUE,
                                       max_rows=pd.get_option("display.max_rows"),
                                       max_cols=pd.get_option("display.max_columns"))

    def text(frame: pd.DataFrame, printer, cycle: bool) -> None:
        printer.text(readable(frame).to_string(na_rep=NO_VALUE,
                                               max_rows=pd.get_option("display.max_rows"),
                                               max_cols=pd.get_option("display.max_columns")))

    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, html)
    shell.display_formatter.formatters["text/plain"].for_type(pd.DataFrame, text)


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
