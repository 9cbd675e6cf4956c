"""One style and one `savefig` for every figure: PDF + PNG, fixed sizes, Type-42 fonts."""

from __future__ import annotations

import io
from pathlib import Path

from memlib import DEFAULT_SCALE, paths
from memlib.process import atomic_write_bytes

STYLE = Path(__file__).with_name("memlib.mplstyle")
SIZES = {"single": (4.0, 3.0), "wide": (8.0, 3.2), "square": (4.5, 4.5), "grid": (10.0, 6.5)}


def use_style() -> None:
    """Apply the memlib style (seaborn colour palette + our rc file)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", palette="colorblind")
    plt.style.use(STYLE)
    _inline_at_double_resolution()


def _inline_at_double_resolution() -> None:
    """In a notebook, show figures as PNGs of twice the pixels at their own size (IPython's
    'retina' format): the book embeds these, so a figure stays sharp on a phone and when
    zoomed. Outside a notebook there is nothing to set."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # the notebooks' extra is not installed
        return
    if get_ipython() is not None:
        set_matplotlib_formats("retina")


def figure(size: str = "single", nrows: int = 1, ncols: int = 1, **kwargs):
    """plt.subplots with one of the fixed sizes in SIZES."""
    import matplotlib.pyplot as plt

    if size not in SIZES:
        raise ValueError(f"unknown figure size {size!r}; choose one of: {', '.join(SIZES)}")
    use_style()
    return plt.subplots(nrows, ncols, figsize=SIZES[size], constrained_layout=True, **kwargs)


def reference_line(ax, value: float, label: str, axis: str = "y", **kwargs) -> None:
    """Draw a paper's reference value (or chance) as a dashed line with a legend label."""
    kwargs = {"color": "0.35", "linestyle": "--", "linewidth": 1.0, **kwargs}
    (ax.axhline if axis == "y" else ax.axvline)(value, label=label, **kwargs)


def savefig(fig, name: str, study: str, scale: str = DEFAULT_SCALE,
            data: str | None = None) -> None:
    """Write `fig` as <figures>/<study>/<name>.pdf and .png atomically. Returns nothing, so a
    notebook cell ending in savefig shows the figure and no list of machine paths.
    `data`: the dataset the figure was made on, named in a small title above it."""
    if data is not None:
        fig.suptitle(f"data: {data}", fontsize="small")
    directory = paths.figures_dir(study, scale)
    for fmt in ("pdf", "png"):
        buffer = io.BytesIO()
        # A fixed metadata date keeps PDFs byte-identical across reruns.
        metadata = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
        fig.savefig(buffer, format=fmt, metadata=metadata)
        path = directory / f"{name}.{fmt}"
        atomic_write_bytes(path, buffer.getvalue())

