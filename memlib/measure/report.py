"""The report page of `python -m memlib measure`: one self-contained HTML file (figures as
embedded PNGs in memlib's figure style, no network), each figure with one sentence whose
numbers are computed from the tables, the settings, the cost, intervals over the seeds, and
where the model did not fit its labels. It reports measurements and claims nothing."""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from memlib import data as datasets
from memlib.plotting import OKABE_ITO, figure

__all__ = ["interval", "by_layer", "over_training", "page", "figures", "fit_notes"]

DPI = 200  # twice the book's 100 px an inch: sharp on a phone and when zoomed


def interval(values) -> tuple[float, float, float]:
    """(mean, low, high): the mean over seeds and its 95% Student-t interval (low and high
    NaN for one seed)."""
    v = np.asarray([x for x in values if x == x], dtype=float)
    if len(v) == 0:
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    if len(v) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return mean, mean - half, mean + half


def by_layer(layers: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """Per layer (in depth order) each column's mean and 95% interval over seeds."""
    rows = []
    for layer, group in layers.sort_values("depth").groupby("layer", sort=False):
        row = {"layer": layer, "depth": int(group["depth"].iloc[0])}
        for column, name in columns.items():
            row[name], row[f"{name} low"], row[f"{name} high"] = interval(group[column])
        rows.append(row)
    return pd.DataFrame(rows)


def over_training(curves: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per measured epoch each column's mean and 95% interval over seeds."""
    rows = []
    for epoch, group in curves.groupby("epoch"):
        row = {"epoch": int(epoch)}
        for column in columns:
            row[column], row[f"{column} low"], row[f"{column} high"] = interval(group[column])
        rows.append(row)
    return pd.DataFrame(rows)


def _num(value: float, digits: int = 1, unit: str = "") -> str:
    return "not measured" if value != value else f"{value:.{digits}f}{unit}"


def _span(mean: float, low: float, high: float, digits: int = 1, unit: str = "") -> str:
    if mean != mean:
        return "not measured"
    if low != low:
        return f"{mean:.{digits}f}{unit} (one seed)"
    if unit == "%":  # a share: its interval shown within 0 to 100
        low, high = max(low, 0.0), min(high, 100.0)
    return f"{mean:.{digits}f}{unit} (95% interval {low:.{digits}f} to {high:.{digits}f})"


def _at(row, name: str, **kwargs) -> str:
    """`_span` of a `by_layer` or `over_training` row's column `name`."""
    return _span(row[name], row[f"{name} low"], row[f"{name} high"], **kwargs)


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    width = fig.get_size_inches()[0] * 100
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode()
    return (f'<img src="data:image/png;base64,{data}" width="{width:.0f}" '
            f'alt="figure" style="max-width:100%;height:auto">')


def _band(ax, frame: pd.DataFrame, x: str, column: str, label: str, colour: str,
          bounds: tuple[float, float] = (-math.inf, math.inf)) -> None:
    """The mean over seeds with its 95% interval as a band, within `bounds`."""
    ax.plot(frame[x], frame[column], marker="o", color=colour, label=label)
    ax.fill_between(frame[x], frame[f"{column} low"].clip(*bounds),
                    frame[f"{column} high"].clip(*bounds), color=colour, alpha=0.2,
                    linewidth=0)


def _layer_figure(layers: pd.DataFrame, seeds: int) -> tuple[str, str]:
    table = by_layer(layers, {"excess": "excess", "drop_sign": "binarized",
                              "drop_pruned": "pruned", "gap_null_b": "shuffled"})
    fig, (left, right) = figure("wide", 1, 2)
    x = np.arange(len(table))
    _band(left, table.assign(x=x), "x", "excess", "random-label excess", OKABE_ITO[0])
    left.axhline(0, color="0.35", linestyle="--", linewidth=1.0)
    left.set(xticks=x, xlabel="layer", ylabel="points above the frozen control",
             title="Random-label excess")
    left.set_xticklabels(table["layer"], rotation=30, ha="right")
    for column, colour in zip(("binarized", "pruned", "shuffled"), OKABE_ITO[1:4],
                              strict=True):
        if table[column].notna().any():
            _band(right, table.assign(x=x), "x", column, column, colour)
    right.set(xticks=x, xlabel="layer", ylabel="test accuracy lost (points)",
              title="Robustness of each layer")
    right.set_xticklabels(table["layer"], rotation=30, ha="right")
    right.legend()
    top = table.loc[table["excess"].idxmax()] if table["excess"].notna().any() else None
    weights = table.dropna(subset=["binarized"])
    fragile = weights.loc[weights["binarized"].idxmax()] if len(weights) else None
    sentence = ("Per layer, over " + f"{seeds} seed{'s' * (seeds > 1)}: the random-label head's "
                "accuracy above the same head on the frozen initialisation (left) and the test "
                "accuracy lost when that layer alone is binarized, half pruned or shuffled "
                "within sign (right).")
    if top is not None:
        sentence += (f" The excess is largest at {top['layer']}: "
                     f"{_at(top, 'excess', unit=' points')}.")
    if fragile is not None:
        sentence += (f" Binarizing {fragile['layer']} costs the most: "
                     f"{_at(fragile, 'binarized', unit=' points')}.")
    return _png(fig), sentence


def _er_figure(curves: pd.DataFrame, runs: pd.DataFrame) -> tuple[str, str]:
    table = over_training(curves, ["er", "test_acc", "clean_fit"])
    fig, (left, right) = figure("wide", 1, 2)
    _band(left, table, "epoch", "er", "effective rank", OKABE_ITO[0])
    left.set(xlabel="epoch", ylabel="effective rank", title="Last-layer gradients")
    _band(right, table.assign(**{c: 100 * table[c] for c in table.columns if c != "epoch"}),
          "epoch", "clean_fit", "clean training labels fitted", OKABE_ITO[2], (0, 100))
    _band(right, table.assign(**{c: 100 * table[c] for c in table.columns if c != "epoch"}),
          "epoch", "test_acc", "test accuracy", OKABE_ITO[1], (0, 100))
    right.set(xlabel="epoch", ylabel="%", title="Fit and test accuracy")
    right.legend()
    peak = interval(runs["peak_epoch"])
    later = table[table["epoch"] >= 1]  # epoch 0's er is inflated by the initialisation
    sentence = ("The effective rank of the per-example last-layer gradients over training "
                "(left) and the share of clean training labels fitted and the test accuracy "
                "(right).")
    if later["er"].notna().any():
        best = later.loc[later["er"].idxmax()]
        sentence += (f" After epoch 0 (inflated by the initialisation) its mean peaks at "
                     f"epoch {int(best['epoch'])} at {_at(best, 'er', digits=2)}; each "
                     f"run's own peak, where the leave-one-out attribution is computed, "
                     f"comes at epoch {_span(*peak)}.")
    return _png(fig), sentence


def _split_figure(curves: pd.DataFrame) -> tuple[str, str]:
    frame = curves.assign(other=1 - curves["noisy_fit"] - curves["noisy_true"])
    table = over_training(frame, ["noisy_fit", "noisy_true", "other", "clean_fit"])
    scaled = table.assign(**{c: 100 * table[c] for c in table.columns if c != "epoch"})
    fig, ax = figure("single")
    for column, label, colour in (("noisy_fit", "memorized (noisy label)", OKABE_ITO[3]),
                                  ("noisy_true", "rule kept (true label)", OKABE_ITO[2]),
                                  ("other", "other class", OKABE_ITO[7])):
        _band(ax, scaled, "epoch", column, label, colour, (0, 100))
    ax.set(xlabel="epoch", ylabel="% of corrupted labels", title="Corrupted labels")
    ax.legend()
    last = scaled.iloc[-1]
    sentence = ("Of the training examples whose label was corrupted, the share the model "
                "predicts as the corrupted label (memorized), as the true label (the rule "
                "kept) or as another class, over training. At the last epoch "
                f"{_at(last, 'noisy_fit', unit='%')} "
                "are memorized and "
                f"{_at(last, 'noisy_true', unit='%')} "
                "keep the rule.")
    return _png(fig), sentence


def _agreement_figure(agreement: pd.DataFrame) -> tuple[str, str]:
    rho = agreement.groupby(["a", "b"], sort=False)["rho"].mean().unstack()
    names = [n for n in dict.fromkeys(agreement["a"]) if n in rho.columns]
    rho = rho.loc[names, names]
    fig, ax = figure("square")
    image = ax.imshow(rho.to_numpy(), vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(names)), names, rotation=90)
    ax.set_yticks(range(len(names)), names)
    ax.set_title("Spearman correlation")
    ax.grid(False)
    fig.colorbar(image, ax=ax, shrink=0.7)
    pairs = [(a, b, rho.loc[a, b]) for i, a in enumerate(names) for b in names[i + 1:]
             if rho.loc[a, b] == rho.loc[a, b]]
    sentence = ("How the per-example scores agree: the Spearman correlation of each pair, "
                "each score signed so that higher means more memorized, averaged over seeds.")
    if pairs:
        a, b, value = max(pairs, key=lambda p: p[2])
        c, d, low = min(pairs, key=lambda p: p[2])
        sentence += (f" The closest pair is {a} and {b} ({value:.2f}), the farthest {c} and "
                     f"{d} ({low:.2f}).")
    return _png(fig), sentence


def _auroc_figure(auroc: pd.DataFrame) -> tuple[str, str]:
    means = {name: interval(group["auroc"]) for name, group
             in auroc.groupby("score", sort=False)}
    means = {name: m for name, m in means.items() if m[0] == m[0]}
    fig, ax = figure("single")
    y = np.arange(len(means))
    centre = np.array([m[0] for m in means.values()])
    ax.barh(y, centre, color=OKABE_ITO[0])
    spread = np.array([[m[0] - m[1], m[2] - m[0]] for m in means.values()]).reshape(-1, 2)
    ax.errorbar(centre, y, xerr=np.nan_to_num(spread.T), fmt="none", color="0.2")
    ax.axvline(0.5, color="0.35", linestyle="--", linewidth=1.0)
    ax.set_yticks(y, list(means))
    ax.set(xlim=(0, 1), xlabel="AUROC for the corrupted labels",
           title="Finding the corrupted labels")
    sentence = ("How well each per-example score, signed so that higher means more memorized, "
                "finds the corrupted labels (AUROC; 0.5 is chance).")
    if means:
        name = max(means, key=lambda n: means[n][0])
        exact = means.get("Fisher LOO (exact)", (math.nan,) * 3)
        sentence += (f" The exact leave-one-out attribution at the er peak reaches "
                     f"{_span(*exact, digits=2)}; the highest is {name} at "
                     f"{_span(*means[name], digits=2)}.")
    return _png(fig), sentence


def figures(results: dict, noisy: bool) -> list[tuple[str, str]]:
    """(embedded image, sentence) of each figure."""
    seeds = results["runs"]["seed"].nunique()
    out = [_layer_figure(results["layers"], seeds),
           _er_figure(results["curves"], results["runs"])]
    if noisy:
        out.append(_split_figure(results["curves"]))
    out.append(_agreement_figure(results["agreement"]))
    if noisy:
        out.append(_auroc_figure(results["auroc"]))
    return out


def fit_notes(runs: pd.DataFrame, fit_train: float, fit_flipped: float) -> list[str]:
    """Where the model did not fit its labels, run by run: a measure of memorization has
    little to see in a model that has not memorized."""
    notes = []
    for _, run in runs.iterrows():
        if run["train_acc"] < fit_train:
            notes.append(f"Seed {int(run['seed'])}: the model fitted {100 * run['train_acc']:.1f}% "
                         f"of its training labels, short of the {100 * fit_train:.0f}% that "
                         "study 1 counts as fitted.")
        flipped = run["noisy_fit"]
        if flipped is not None and flipped == flipped and flipped < fit_flipped:
            notes.append(f"Seed {int(run['seed'])}: it fitted {100 * flipped:.1f}% of the "
                         f"corrupted labels, short of {100 * fit_flipped:.0f}%.")
    return notes


def _table(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                    for k, v in rows)
    return f"<table>{cells}</table>"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


STYLE = """
body { font-family: -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       font-size: 16px; line-height: 1.5; color: #222; max-width: 760px; margin: 2em auto;
       padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; display: block; overflow-x: auto; }
th, td { text-align: left; padding: 0.2em 0.8em 0.2em 0; border-bottom: 1px solid #ddd;
         font-size: 14px; vertical-align: top; }
figure { margin: 1.2em 0; } figcaption { font-size: 15px; }
.note { background: #fff6e5; border-left: 4px solid #E69F00; padding: 0.4em 0.8em; }
"""


def page(r, config, measures, results: dict, wall: float, cost: dict[str, float]) -> str:
    """The report page as HTML text."""
    run = measures[0].watched.run
    noisy = r.noise > 0
    seeds = sorted(results["runs"]["seed"].unique().tolist())
    settings = [
        ("model", r.model), ("dataset", r.dataset),
        ("layers", ", ".join(results["layers"].sort_values("depth")["layer"].unique())),
        ("label noise", f"{100 * r.noise:.0f}% of the training labels"),
        ("seeds", ", ".join(map(str, seeds))), ("scale", r.scale),
        ("training images", "all" if run.train_samples is None else str(run.train_samples)),
        ("test images", "all" if run.test_samples is None else str(run.test_samples)),
        ("epochs", str(run.epochs)), ("batch size", str(run.batch_size)),
        ("optimizer", f"{run.optimizer}, learning rate {run.lr:g}, {run.schedule} schedule"),
        ("random labels", f"{run.n_random or datasets.NUM_CLASSES[r.dataset]} classes, "
                          "a linear head at every measured layer"),
        ("scored examples", "all training images" if config.scatter_samples is None
         else str(config.scatter_samples)),
        ("null-model draws per layer", str(config.null_draws)),
        ("weights", "a random initialisation" if r.checkpoint is None
         else f"checkpoint {Path(r.checkpoint).name}"),
        ("device", run.device)]
    costs = [("this command (wall clock)", _duration(wall)),
             *((f"{kind} (compute, summed over runs)", _duration(seconds))
               for kind, seconds in cost.items())]
    notes = fit_notes(results["runs"], config.study1.fit_train_acc,
                      config.study1.fit_flipped_acc)
    parts = [f"<h1>{html.escape(r.model)} on {html.escape(r.dataset)}: four lenses on "
             "memorization</h1>",
             "<p>Measurements of one model by the four papers' instruments, computed by "
             "memlib's lens over stored training runs. They are measurements over "
             f"{len(seeds)} seed{'s' * (len(seeds) > 1)} with 95% intervals, not verdicts.</p>"]
    if notes:
        parts.append('<div class="note"><p>Where the model did not fit its labels (a measure '
                     "of memorization has little to see there):</p><ul>"
                     + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul></div>")
    if not noisy:
        parts.append("<p>No label was corrupted (no --noise): the split of the corrupted "
                     "labels and the AUROC for them have nothing to measure.</p>")
    for k, (image, sentence) in enumerate(figures(results, noisy), start=1):
        parts.append(f"<figure>{image}<figcaption><b>Figure {k}.</b> "
                     f"{html.escape(sentence)}</figcaption></figure>")
    parts += ["<h2>Settings</h2>", _table(settings), "<h2>Cost</h2>", _table(costs),
              "<h2>Tables</h2><p>Beside this page, as CSV: runs, layers, curves (over "
              "training), examples (per-example scores), agreement and auroc.</p>"]
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(r.model)} on {html.escape(r.dataset)}</title>"
            f"<style>{STYLE}</style></head><body><main>{body}</main></body></html>")
