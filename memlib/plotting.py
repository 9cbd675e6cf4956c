"""One style and one `savefig` for every figure: PDF + PNG, fixed sizes, Type-42 fonts."""

from __future__ import annotations

import io
import re
from pathlib import Path

from memlib import DEFAULT_SCALE, paths
from memlib.process import atomic_write_bytes

STYLE = Path(__file__).with_name("memlib.mplstyle")
SIZES = {"single": (4.0, 3.0), "wide": (8.0, 3.2), "square": (4.5, 4.5), "grid": (10.0, 6.5)}
# Okabe & Ito's colour-blind-safe palette (the style's colour cycle too): told apart with any
# common colour vision deficiency and in greyscale, black left for reference lines
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
             "#000000")
# The book's text column, in inches of 100 CSS px (the figure's PNG is shown at 100 px an
# inch and shrunk to the column when wider), and the smallest text a projected page can show.
COLUMN_INCHES = 7.0
MIN_POINTS = 9.0
FONT_SIZES = ("font.size", "axes.titlesize", "axes.labelsize", "legend.fontsize",
              "xtick.labelsize", "ytick.labelsize", "figure.titlesize", "legend.title_fontsize")


def use_style(width: float = COLUMN_INCHES) -> None:
    """Apply the memlib style (the colour-blind-safe palette + our rc file) for a figure
    `width` inches wide: one wider than the book's column is shrunk to it, so its text is
    set larger by as much, and reads at the style's size where the book shows it."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", palette=list(OKABE_ITO))
    plt.style.use(STYLE)
    grow = max(1.0, width / COLUMN_INCHES)
    for key in FONT_SIZES:
        size = plt.rcParams[key]
        if isinstance(size, (int, float)):
            plt.rcParams[key] = size * grow
    _inline_at_double_resolution()


def rendered_points(fig) -> list[tuple[str, float]]:
    """Each visible text of `fig` with its size in points where the book shows it: its
    saved width (tight bounding box) shrunk to the column when wider."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    width = fig.get_tightbbox(renderer).width  # inches
    shrink = min(1.0, COLUMN_INCHES / width)
    return [(t.get_text(), t.get_fontsize() * shrink) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and t.get_figure() is not None]


def small_text(fig, minimum: float = MIN_POINTS) -> list[str]:
    """The texts of `fig` smaller than `minimum` points where the book shows it."""
    return [f"{text!r} at {points:.1f} pt" for text, points in rendered_points(fig)
            if points < minimum - 0.05]


SMALL = 0.833  # matplotlib's "small" text, as a fraction of font.size
SIZED_FOR = "memlib figure inches"  # a saved PNG's note of the width its text was sized for


def style_points() -> float:
    """The smallest text the style sets, in points, at the book's column: the least of its
    font sizes and of "small" text, which the notebooks' annotations use."""
    sizes = {}
    for line in STYLE.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in FONT_SIZES:
            try:
                sizes[key.strip()] = float(value.split("#")[0])
            except ValueError:  # a size by name ("large") is relative to font.size
                continue
    return min([*sizes.values(), SMALL * sizes.get("font.size", 10.0)])


def shown_points(saved_inches: float, sized_for: float | None = None) -> float:
    """The smallest text of a figure saved `saved_inches` wide (its tight bounding box), where
    the book shows it (shrunk to the column when wider): the style's smallest text, set larger
    by use_style for the figure's own width `sized_for` (None: not known, not enlarged)."""
    grow = max(1.0, (sized_for or COLUMN_INCHES) / COLUMN_INCHES)
    return style_points() * grow * min(1.0, COLUMN_INCHES / saved_inches)


def saved_png_points(path: Path) -> tuple[float, float]:
    """(saved width in inches, the smallest text's points where the book shows it) of the PNG
    that savefig wrote at `path`."""
    from PIL import Image

    with Image.open(path) as image:
        dpi = float((image.info.get("dpi") or (200, 200))[0]) or 200.0
        inches = image.width / dpi
        sized_for = image.info.get(SIZED_FOR)
    return inches, shown_points(inches, float(sized_for) if sized_for else None)


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
    use_style(SIZES[size][0])
    return plt.subplots(nrows, ncols, figsize=SIZES[size], constrained_layout=True, **kwargs)


def column_figure(nrows: int, row_inches: float, ncols: int = 1, **kwargs):
    """plt.subplots as wide as the book's column and `row_inches` tall per row: one row per
    dataset, for any number of them, each as wide as the page, its text at the style's size
    where the book shows it (a figure's legend goes inside it or under it, never beside)."""
    import matplotlib.pyplot as plt

    use_style(COLUMN_INCHES)
    return plt.subplots(nrows, ncols, figsize=(COLUMN_INCHES, row_inches * nrows),
                        constrained_layout=True, **kwargs)


def reference_line(ax, value: float, label: str, axis: str = "y", **kwargs) -> None:
    """Draw a paper's reference value (or chance) as a dashed line with a legend label."""
    kwargs = {"color": "0.35", "linestyle": "--", "linewidth": 1.0, **kwargs}
    (ax.axhline if axis == "y" else ax.axvline)(value, label=label, **kwargs)


def reference(ax, value: float | tuple[float, float], label: str, axis: str = "y",
              **kwargs) -> None:
    """Draw the paper's value on `ax`: a number as a black dotted line, a range (low, high)
    as a hatched band, labelled "paper: <label>" in the legend (the caption says what it is).
    Drawn over the data, translucent, so it shows where bars or boxes cover it."""
    if isinstance(value, tuple):
        low, high = value
        kwargs = {"facecolor": "none", "edgecolor": "black", "hatch": "//", "linewidth": 0.8,
                  "alpha": 0.6, "zorder": 3, **kwargs}
        (ax.axhspan if axis == "y" else ax.axvspan)(low, high, label=f"paper: {label}",
                                                   **kwargs)
        return
    kwargs = {"color": "black", "linestyle": ":", "linewidth": 1.4, "zorder": 3, **kwargs}
    (ax.axhline if axis == "y" else ax.axvline)(value, label=f"paper: {label}", **kwargs)


_NUMBER = r"\d+(?:\.\d+)?"
# a number of a paper's text, a range "92-96" as one value, each with what follows it; a
# number inside a name ("CIFAR-10N", "top-100", "ViT-B/32", "1e4", "17..4097") is none, and
# one after "±" or "+-" is a spread, not a value
_PAPER_VALUE = re.compile(rf"(?<![\w./])(?<!\w-)(±\s*|\+-\s*)?({_NUMBER})"
                          rf"(?:\s*[-–]\s*({_NUMBER}))?(?![\w.])\s*(%?)")


def paper_values(text: str, unit: str = "%") -> list[float | tuple[float, float]]:
    """The values a claim's `paper` text gives, in its order, as `reference` draws them: each
    number followed by `unit` ("%", or "" for the numbers without one), a range "92-96%" as
    (92.0, 96.0). A notebook reads the paper's value from its claim, never typing it twice."""
    if unit not in ("%", ""):
        raise ValueError(f"unknown unit {unit!r}; a paper value is read as '%' or ''")
    return [(float(low), float(high)) if high else float(low)
            for spread, low, high, after in _PAPER_VALUE.findall(text)
            if not spread and after == unit]


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
        metadata = ({"CreationDate": None} if fmt == "pdf" else
                    {"Software": None, SIZED_FOR: f"{fig.get_figwidth():.3f}"})
        fig.savefig(buffer, format=fmt, metadata=metadata)
        path = directory / f"{name}.{fmt}"
        atomic_write_bytes(path, buffer.getvalue())

