"""Figures for a projector: text at least 9 pt where the book shows it, a colour-blind-safe
cycle, the paper's value drawn and labelled. Rendered small and synthetic, never a study."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from memlib.plotting import (  # noqa: E402
    COLUMN_INCHES,
    OKABE_ITO,
    SIZES,
    figure,
    paper_values,
    reference,
    rendered_points,
    small_text,
)


def busy(size: str, nrows: int = 1, ncols: int = 1):
    """A figure of `size` with every kind of text a notebook writes, at the style's sizes."""
    fig, axes = figure(size, nrows, ncols, squeeze=False)
    for ax in axes.flat:
        ax.plot([0, 1, 2], [1, 3, 2], label="runs")
        ax.set(xlabel="epoch", ylabel="accuracy (%)", title="panel")
        ax.annotate("0.83", (1, 2))
        ax.legend(fontsize="small")
    fig.suptitle("data: fashion_mnist", fontsize="small")
    return fig


@pytest.mark.parametrize("size", list(SIZES))
def test_every_text_of_every_size_reads_at_9_points_in_the_books_column(size):
    fig = busy(size, 2, 3) if size == "grid" else busy(size)
    try:
        assert small_text(fig) == []
        assert rendered_points(fig)  # it saw the texts
    finally:
        plt.close(fig)


def test_a_tiny_label_or_a_figure_wider_than_the_column_is_caught():
    fig, ax = figure("single")
    ax.set_title("cell label", fontsize=6)
    try:
        assert small_text(fig) == ["'cell label' at 6.0 pt"]
    finally:
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(2 * COLUMN_INCHES, 3))  # made outside `figure`
    ax.set_xlabel("epoch", fontsize=10)
    try:
        assert any(t.startswith("'epoch'") for t in small_text(fig))  # shown at half size
    finally:
        plt.close(fig)


def test_the_default_cycle_is_colour_blind_safe():
    fig, ax = figure("single")
    try:
        colours = [c.lower() for c in plt.rcParams["axes.prop_cycle"].by_key()["color"]]
        assert colours == [c.lower() for c in OKABE_ITO]
        line, = ax.plot([0, 1])
        assert matplotlib.colors.to_hex(line.get_color()) == OKABE_ITO[0].lower()
    finally:
        plt.close(fig)


def test_the_papers_value_is_drawn_and_labelled_as_the_papers():
    fig, ax = figure("single")
    try:
        reference(ax, 0.83, "easy pair ~83%")
        reference(ax, (0.6, 0.8), "AUROC 0.6–0.8", axis="x")
        labels = ax.get_legend_handles_labels()[1]
        assert labels == ["paper: easy pair ~83%", "paper: AUROC 0.6–0.8"]
        assert ax.lines[-1].get_ydata()[0] == 0.83 and ax.patches
    finally:
        plt.close(fig)


@pytest.mark.parametrize(("text", "unit", "values"), [
    ("authors' code: easy ~83%, hard ~51%", "%", [83.0, 51.0]),
    ("hard signed ~50% for p < 0.35, 92-96% by p ~ 0.5", "%", [50.0, (92.0, 96.0)]),
    ("MNIST easy signed 54% -> 98.5% at a ~ 0.2-0.3", "%", [54.0, 98.5]),
    ("MNIST easy signed 54% -> 98.5% at a ~ 0.2-0.3", "", [(0.2, 0.3)]),
    ("top-100: 69.2% (ViT) to 96.2% (SmallCNN); 94.4% CIFAR-10N", "%", [69.2, 96.2, 94.4]),
    ("top-100: 94.4% ± 1.9% (CIFAR-10N)", "%", [94.4]),  # a spread is no value
    ("top-100: 94.4% ± 1.9% (CIFAR-10N)", "", []),  # nor a name's number
    ("28.88 +- 1.95 (clean) -> 97.09 +- 1.78 (60%)", "", [28.88, 97.09]),
    ("AUROC ~0.6-0.8", "", [(0.6, 0.8)]),
    ("ViT-B/32 ImageNet: ≈0% first layer, ≈70–80% deep", "%", [0.0, (70.0, 80.0)]),
    ("ViT-B/32, λ up to 1e4", "", []),
    ("qualitative", "%", []),
])
def test_the_papers_values_are_read_from_its_words(text, unit, values):
    assert paper_values(text, unit) == values


def test_a_value_read_from_the_papers_words_is_drawn_as_its_kind():
    fig, ax = figure("single")
    try:
        low, (band_low, band_high) = paper_values("hard ~50% for p < 0.35, 92-96% by p ~ 0.5")
        reference(ax, low, "hard pair at p = 0")
        reference(ax, (band_low, band_high), "hard pair by p ≈ 0.5")
        assert ax.lines[-1].get_ydata()[0] == 50.0 and len(ax.patches) == 1
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="unit"):
        paper_values("83%", "points")
