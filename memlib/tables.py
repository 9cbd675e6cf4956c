"""Tables: CSV is the truth, Markdown is for reading."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from memlib import DEFAULT_SCALE, paths
from memlib.process import atomic_write_bytes


def to_markdown(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """`df` as a Markdown table; a "|" inside a cell is escaped, so it stays in its column."""
    escaped = df.copy()
    for column in escaped.columns:
        if any(isinstance(v, str) for v in escaped[column]):
            escaped[column] = [v.replace("|", "\\|") if isinstance(v, str) else v
                               for v in escaped[column]]
    escaped.columns = [str(c).replace("|", "\\|") for c in escaped.columns]
    return escaped.to_markdown(index=False, floatfmt=floatfmt) + "\n"


def save_table(df: pd.DataFrame, name: str, study: str, scale: str = DEFAULT_SCALE
               ) -> tuple[Path, Path]:
    """Write <figures>/<study>/<name>.csv and .md atomically; return both paths."""
    directory = paths.figures_dir(study, scale)
    csv, md = directory / f"{name}.csv", directory / f"{name}.md"
    atomic_write_bytes(csv, df.to_csv(index=False).encode())
    atomic_write_bytes(md, to_markdown(df).encode())
    return csv, md
