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
# # Random-label prediction heads: measuring and regularizing memorization
#
# Becker, Konrad, Garcia Rodriguez, Risse, *Random Label Prediction Heads for Studying
# Memorization in Deep Neural Networks* (ICLR 2026; arXiv 2411.19640).
#
# **Question.** How much *sample-specific* information does each layer of a network carry,
# and does suppressing it help generalization?
#
# **Claims of the paper** (checked in the table at the end, with rules fixed before the run):
# random-label accuracy grows with depth; it rises early in training, slightly before train
# and test accuracy diverge; dropout, weight decay and label smoothing lower it; a regularizer
# that penalizes the head's correct predictions lowers it at the regularized layer, shifts
# memorization to earlier layers when only the last layer is regularized (not when all are),
# helps under label noise and on well-sampled data, and hurts under-sampled data (tail classes).
#
# ## Method
# Each training sample $i$ gets a random label $r_i \sim \mathcal U\{1..n\}$, drawn once with its
# own seed, keyed by the sample's index in the full dataset (independent of class, label noise,
# subset and shuffle). At each probed layer $\ell$ a linear head $g_\ell$ reads the pooled
# representation $h_\ell(x)$ (mean over space for conv maps, over tokens for ViTs). With
# $\mathrm{sg}$ the stop-gradient,
#
# $$\mathcal L = \mathcal L_{\text{class}} + \mathcal L_{\text{rnd}}
# + \lambda\,\mathcal L_{\text{reg}}, \qquad \mathcal L_{\text{class}} = \mathrm{CE}(f(x), y),$$
#
# $$\mathcal L_{\text{rnd}} = \sum_\ell
# \mathrm{CE}\big(g_{\theta_\ell}(\mathrm{sg}[h_\ell(x)]), r\big)
# \ \text{(heads only)},\qquad
# \mathcal L_{\text{reg}} = \sum_{\ell \in R} -\log\big(1 - \hat p_{\ell, r}\big)
# \ \text{(extractor only)},$$
#
# with $\hat p_{\ell} = \mathrm{softmax}\big(g_{\mathrm{sg}[\theta_\ell]}(h_\ell(x))\big)$,
# losses averaged over the batch, and $R$ is the last probed layer or all of them.
# Minimising $-\log(1-\hat p_r)$ makes the extractor *lower* the head's probability of
# $r_i$; it is computed stably as
# $\log(1-\hat p_r) = \operatorname{logsumexp}_{j\ne r} z_j - \operatorname{logsumexp}_j z_j$.
# The head's parameters are detached with `torch.func.functional_call`. The memorization
# measure is the heads' accuracy on the **training** set's random labels in eval mode, always
# shown beside chance ($1/n$) and beside a **frozen-initialisation baseline**: the same head,
# trained with the same optimizer and epochs on the *untrained* extractor's features, i.e.
# what a head can memorize on its own. The **excess** of a layer is its trained minus its
# frozen accuracy.
#
# Two controls of our own. A **capacity-matched head** per layer reads the layer through a
# fixed Gaussian projection $P_\ell \in \mathbb R^{k\times d_\ell}$ ($k = 32$, entries
# $\mathcal N(0, 1/k)$, never trained): every layer's head then has the same number of
# parameters, so a trend over depth cannot come from layer width. And the **within- to
# between-class variance ratio** of each layer's features (clean labels),
# $\operatorname{tr}\Sigma_W / \operatorname{tr}\Sigma_B$, measures how far each class has
# collapsed toward its mean: a well-trained network removes within-class variation in deep
# layers, and with it what a random-label head could read.
#
# ## What differs from the paper, and why
# The paper trains ViT-B/32 on ImageNet (90 epochs) and WRN-16-4 on CIFAR-100 (200 epochs).
# Both arms run at full scale: `params/full/01_random_label_heads.yaml` holds the CIFAR-100
# arm, and `--params params/full/01_random_label_heads.imagenet.yaml` switches to the
# ImageNet arm. The default (small) scale must run in about 10 minutes on two CPU cores and
# must still *memorize*: a study of memorization on a network that has not fitted its
# training set measures nothing. A pilot (`pilots/rlp_pilot.py`, its table below) chose:
# - **Data:** 1,000 class-stratified Fashion-MNIST training samples (offline) with **40%
#   symmetric label noise**, so that fitting the training set requires memorizing 400 wrong
#   labels; test on 1,000 clean test samples.
# - **Models:** a 6-hidden-layer MLP (width 256) for every sweep, and a SmallCNN (32/64/128
#   channels, 40 epochs) beside it in the layer-wise experiment. Both train to interpolation:
#   Adam, LR 2e-3 with a cosine schedule, batch 64, 150 epochs for the MLP. The heads use LR
#   3e-2, follow the same schedule and have no weight decay. Inputs are standardized by the
#   training split's per-channel mean and standard deviation; each run records the first
#   epoch at which it fits (train accuracy ≥ 99%, ≥ 95% of the flipped labels) and still
#   trains all its epochs, so that every condition is compared after equal training.
# - **Seeds:** every condition runs with three seeds; comparisons are paired by seed and a
#   difference counts only beyond two standard errors (the claims table says *within noise*
#   otherwise).
# - **Measurements** every 5 epochs (train, test and random-label accuracy), not every epoch.
# - **Cuts:** one strength per standard regularizer (dropout 0.5, weight decay 1e-3, label
#   smoothing 0.3); $\lambda \in \{0, 10, 100\}$ with a mean-reduced penalty (its gradient scales
#   like $\hat p \approx 1/n$, so the paper's $\lambda$ up to $10^4$ with 1000 random classes
#   corresponds to much smaller values with $n = 10$), all-layer regularization only at
#   $\lambda = 100$; fractions 30% and 100%; a long tail with ratio 10; the label-noise
#   experiment at the default 40% only. "Best $\lambda$" is the $\lambda > 0$ with the highest
#   mean test accuracy in the sweep (chosen on the test set, which flatters the regularizer a
#   little).
# - **Compute:** one CPU thread per training run and two runs at once (`parallel_runs`), each
#   in its own process; results are the same as computed one after another.

# %% tags=["parameters"]
scale = "small"
dataset = "fashion_mnist"
train_samples = 1000
test_samples = 1000
noise = 0.4
model = "mlp"
widths = (256, 256, 256, 256, 256, 256)
cnn_channels = (32, 64, 128)
wrn_depth = 16
wrn_width = 4
layer_models = ("mlp", "smallcnn")
layer_model_epochs = 40
n_random = None
head_hidden = 0
head_project = 32
head_lr = 3e-2
epochs = 150
measure_every = 5
parallel_runs = 2
batch_size = 64
optimizer = "adam"
lr = 2e-3
momentum = 0.9
weight_decay = 0.0
schedule = "cosine"
warmup_epochs = 0.0
dropouts = (0.5,)
weight_decays = (1e-3,)
label_smoothings = (0.3,)
lambdas = (10.0, 100.0)
fractions = (0.3, 1.0)
long_tail_ratio = 10.0
noise_rates = (0.4,)
noise_lambdas = (10.0,)
seeds = (0, 1, 2)
label_seed = 12345
data_seed = 0
device = "cpu"
inputs = "standardized"
fit_train_acc = 0.99
fit_flipped_acc = 0.95
epochs_after_fit = None

# %%
import time

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from memlib import paths
from memlib.claims import evaluate, write
from memlib.config import from_namespace
from memlib.pipeline import study_results
from memlib.plotting import figure, reference_line, savefig
from memlib.rlp import (
    CLAIMS,
    Config,
    excess_by_layer,
    gap_epoch,
    measure_claims,
    meets_target,
    memorization,
    onset_epoch,
)
from memlib.tables import save_table

STUDY = "01_random_label_heads"
config = from_namespace(Config, globals())
start = time.time()
# At full scale this reads what `memlib run` computed (see the README) and names the
# command to run if a result is missing; below full scale it computes, cached.
results = study_results("rlp", config, scale)
print(f"experiments: {time.time() - start:.1f} s (cached runs load instantly)")
chance, layers, last = results["chance"], results["layers"], results["last_layer"]
measured = measure_claims(results)
models_run = list(dict.fromkeys(results["layerwise"]["model"]))
print("probed layers:", layers, "| chance:", chance, "| best λ:", results["best_lambda"])


def mean_sd(frame: pd.DataFrame, by, column: str) -> pd.DataFrame:
    """Mean and standard deviation of `column` over seeds."""
    return frame.groupby(by, sort=False)[column].agg(["mean", "std"]).fillna(0)


# %% [markdown]
# ## The pilot that chose this setting
# Each row is one training run of the default model (seed 0) with one setting changed from
# the row above it: train accuracy, fit of the flipped labels, random-label accuracy per layer
# of the trained network and of the frozen-init baseline, the largest excess, the variance
# ratio per layer and the run time on one CPU core. The table was computed by
# `python pilots/rlp_pilot.py` (about 10 minutes), not by this notebook.

# %%
pilot = pd.read_csv(paths.repo_root() / "pilots" / "01_random_label_heads.csv")
pilot

# %% [markdown]
# What the pilot shows. The previous default (4k samples, 20 epochs) never fitted its
# training set (91.5%) and its heads sat at or below the frozen baseline. Fitting alone does
# not help: the 4×256 MLP on 1k clean samples reaches 99% but is *below* the frozen baseline at
# every layer, because random ReLU features of a thousand images are easy for a linear head
# (44% at the first layer, chance 10%) and the trained network collapses its classes (variance
# ratio 0.28 at the last layer against about 2 at initialisation). Label noise keeps the classes
# apart (ratio ≈ 2), and depth pushes the frozen baseline toward chance in the deepest layers
# (PyTorch's default initialisation shrinks the input signal layer by layer). The best MLP, six
# layers of 256 trained to interpolation on 40% noise with a cosine schedule, reaches an
# excess of 8.6 points at its last layer: short of the 10-point target. A hidden layer in the
# head, a higher head LR, 5 random classes, 500 samples or 8 layers did not get there (the
# heads gain capacity on frozen features as much as on trained ones; 8 layers do not
# interpolate in 150 epochs). The SmallCNN gets there: its globally pooled conv features at
# initialisation carry almost nothing sample-specific (frozen 11–16%), and after 40 epochs on
# 40% noise its last block reaches 28% (+12 points). Hence the default: the 6×256 MLP for the
# sweeps (fast enough for every condition × 3 seeds), the SmallCNN beside it in the layer-wise
# experiment. The seconds column was measured on a loaded shared machine; compare rows
# only roughly.

# %% [markdown]
# **Precondition check.** The targets of this scale, for the runs without a regularizer:
# train accuracy ≥ 99% including ≥ 95% of the flipped labels, and at some probed layer of at
# least one model a random-label accuracy ≥ 10 points above the frozen-init baseline, beyond
# two standard errors over seeds. Every claim's rule names the preconditions it needs; a claim
# whose precondition fails is reported as such, never as "holds".

# %%
checks = []
for name in models_run:
    m = memorization(results, name)
    checks.append({"model": name, "worst train acc": m["train"],
                   "worst flipped-label fit": m["flipped"],
                   "largest excess (mean ± 2 SE)": str(m["excess"]),
                   "last layer excess": str(m["last_excess"]),
                   "meets the target": meets_target(m)})
checks = pd.DataFrame(checks)
save_table(results["fit"], "fit", STUDY, scale)
checks

# %% [markdown]
# Both models fit every training label, the flipped ones included, in every seed. The
# SmallCNN meets the 10-point target with an excess of about 11 points at its last block,
# well beyond its seed spread; the MLP's largest excess, about 7 points at its last layer, is
# beyond its spread but short of 10. The depth claim is judged on the models that meet the
# target; the regularizer claims, measured on the MLP, need memorization at the layer they
# regularize (an excess beyond noise at the last layer), which the MLP has.

# %% [markdown]
# ## 1. Random-label accuracy vs depth
# Final training-set random-label accuracy at each probed layer (mean ± sd over seeds), beside
# the frozen-initialisation baseline and chance; dotted: the capacity-matched heads, which read
# every layer through a fixed random projection to 32 dimensions.

# %%
lw = results["layerwise"]
save_table(lw, "layerwise", STUDY, scale)
fig, axes = figure("wide", 1, len(models_run), sharey=True, squeeze=False)
for ax, name in zip(axes[0], models_run, strict=True):
    d = lw[lw["model"] == name]
    depth = d.groupby("layer", sort=False)["depth"].first()
    for column, style, label in (("rlp_acc", "o-", "trained"), ("frozen_acc", "s--", "frozen init"),
                                 ("proj_acc", "o:", "trained, 32-d projection"),
                                 ("frozen_proj_acc", "s:", "frozen, 32-d projection")):
        if d[column].notna().any():
            stats = mean_sd(d, "layer", column)
            ax.errorbar(depth, 100 * stats["mean"], 100 * stats["std"], fmt=style, capsize=2,
                        label=label)
    reference_line(ax, 100 * chance, "chance")
    ax.set_xticks(depth, depth.index, rotation=30)
    ax.set_title(f"{name} (test acc {100 * d['test_acc'].mean():.1f}%)")
    ax.set_xlabel("probed layer")
axes[0][0].set_ylabel("random-label train acc. (%)")
axes[0][0].legend(fontsize=6)
savefig(fig, "fig2_layerwise_rlp", STUDY, scale, data=results["dataset"])
excess = {name: excess_by_layer(lw, name) for name in models_run}
print(pd.DataFrame({name: {n: str(e) for n, e in ex.items()} for name, ex in excess.items()}))
print("depth claim:", measured["depth"])

# %% [markdown]
# Each panel compares what a head reads from the trained network (solid) with what the same
# head reads from the network at initialisation (dashed); dotted lines are the
# capacity-matched heads. In both models the excess grows with depth: the MLP starts far
# *below* its frozen baseline at act1 (the random first layer is easy to fit, about 60%) and
# ends above it at act5 and act6; the SmallCNN is above its baseline at every block and most
# at block3. The capacity-matched heads read every layer through the same 32 dimensions and
# show the same ordering with smaller excesses (MLP: about 0 up to act4, +4 points at act5
# and act6; SmallCNN: +3, +5, +7 points), so the trend is not an artefact of layer width.
# The levels stay far below the paper's 70–80% on ImageNet: with 1,000 samples a head on
# *frozen* features already fits much, so the comparison here is the excess, not the level.

# %% [markdown]
# ### Why depth behaves as it does: class collapse
# The within- to between-class variance ratio of each layer's features (clean labels), for
# the trained networks and at initialisation. A small ratio means each class has collapsed
# toward its mean, leaving little within-class variation for a random-label head to read.

# %%
fig, axes = figure("wide", 1, len(models_run), sharey=True, squeeze=False)
for ax, name in zip(axes[0], models_run, strict=True):
    d = lw[lw["model"] == name]
    depth = d.groupby("layer", sort=False)["depth"].first()
    for column, style, label in (("collapse", "o-", "trained"),
                                 ("frozen_collapse", "s--", "initialisation")):
        stats = mean_sd(d, "layer", column)
        ax.errorbar(depth, stats["mean"], stats["std"], fmt=style, capsize=2, label=label)
    ax.set_xticks(depth, depth.index, rotation=30)
    ax.set_yscale("log")
    ax.set_title(name)
    ax.set_xlabel("probed layer")
axes[0][0].set_ylabel("tr Σ_within / tr Σ_between")
axes[0][0].legend(fontsize=6)
savefig(fig, "fig2b_class_collapse", STUDY, scale, data=results["dataset"])
print(lw.groupby(["model", "layer"], sort=False)[["collapse", "frozen_collapse"]].mean().round(3))

# %% [markdown]
# With 40% of labels flipped, the trained networks do not collapse their clean classes: the
# ratio stays near 1.5 in the MLP (below its value at initialisation, 1.8–2.3) and rises in
# the SmallCNN (most at block1, from 1.3 to 2.2). The pilot's clean runs are the contrast:
# there the ratio falls to 0.26–0.3 in the last layers, and random-label accuracy falls with
# it. Memorizing flipped
# labels keeps sample-specific variation alive in deep layers, which is why this scale needs
# label noise to show memorization at depth.

# %% [markdown]
# ## 2. When does the random-label accuracy rise?

# %%
h = results["history"]
save_table(h, "history", STUDY, scale)
rise = onset_epoch(h[f"rlp_{last}"].tolist(), chance, epochs=h["epoch"].tolist())
gap = gap_epoch(h["train_acc"].tolist(), h["test_acc"].tolist(), epochs=h["epoch"].tolist())
fig, (ax1, ax2) = figure("wide", 1, 2)
ax1.plot(h["epoch"], 100 * h["train_acc"], label="train (noisy labels)")
ax1.plot(h["epoch"], 100 * h["test_acc"], label="test")
ax1.set_ylabel("class accuracy (%)")
fh = results["frozen_history"]
for i, layer in enumerate(layers):
    ax2.plot(h["epoch"], 100 * h[f"rlp_{layer}"], color=f"C{i}", label=layer)
    ax2.plot(fh["epoch"], 100 * fh[f"rlp_{layer}"], color=f"C{i}", linestyle="--", alpha=0.6,
             label="dashed: frozen init" if i == len(layers) - 1 else None)
reference_line(ax2, 100 * chance, "chance")
ax2.set_ylabel("random-label train acc. (%)")
for ax in (ax1, ax2):
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if gap is not None:
        ax.axvline(gap, color="C3", linestyle=":", label="train−test gap > 5 pts")
    if rise is not None:
        ax.axvline(rise, color="C4", linestyle="-.", label=f"{last}: half of final excess")
    ax.legend(fontsize=6)
savefig(fig, "fig3_rlp_over_training", STUDY, scale, data=results["dataset"])
print("early rise:", measured["early_rise"])

# %% [markdown]
# Left: train (noisy labels) and test accuracy of the default MLP, first seed; right:
# random-label accuracy of each probed layer over the same epochs (solid, measured every 5
# epochs), with heads trained for as many epochs on the frozen initial features (dashed).
# Test accuracy peaks around epoch 25 (61%) and falls to 45% as the network fits the flipped
# labels, so the train–test gap opens at epoch 40; the last layer's random-label accuracy
# climbs mostly late, while the cosine schedule anneals, and reaches half its final excess
# over chance only at epoch 105. Here memorization as the heads see it *follows* the
# divergence of train and
# test accuracy instead of preceding it: the early-rise claim does not hold at this scale.

# %% [markdown]
# ## 3. Standard regularizers

# %%
reg = results["regularizers"]
save_table(reg, "regularizers", STUDY, scale)
reg["setting"] = [("none" if k == "none" else f"{k.replace('_', ' ')} {v:g}")
                  for k, v in zip(reg["regularizer"], reg["strength"], strict=True)]
fig, (ax1, ax2) = figure("wide", 1, 2)
order = list(dict.fromkeys(reg["setting"]))
x = np.arange(len(order))
for i, layer in enumerate(layers):
    stats = mean_sd(reg, "setting", f"rlp_{layer}").loc[order]
    ax1.errorbar(x + 0.06 * (i - len(layers) / 2), 100 * stats["mean"], 100 * stats["std"],
                 fmt="o", capsize=2, color=f"C{i}", label=layer)
reference_line(ax1, 100 * chance, "chance")
for column, style in (("train_acc", "s"), ("test_acc", "o")):
    stats = mean_sd(reg, "setting", column).loc[order]
    ax2.errorbar(x, 100 * stats["mean"], 100 * stats["std"], fmt=style, capsize=2,
                 label=column.replace("_acc", "").replace("train", "train (noisy labels)"))
for ax in (ax1, ax2):
    ax.set_xticks(x, order, rotation=20)
    ax.legend(fontsize=6)
ax1.set_ylabel("random-label train acc. (%)")
ax2.set_ylabel("class accuracy (%)")
savefig(fig, "fig4_standard_regularizers", STUDY, scale, data=results["dataset"])
print(reg.groupby("setting", sort=False)[["train_acc", "test_acc", f"rlp_{last}"]]
      .agg(["mean", "std"]).round(4).to_string())
print("drop in last-layer RLP accuracy:", measured["regularizers"])

# %% [markdown]
# Left: random-label accuracy per layer (mean ± sd over three seeds) without a regularizer
# and with each standard regularizer; right: train (noisy labels) and test accuracy. Dropout
# 0.5 lowers the last layer's random-label accuracy by about 7 points and weight decay by
# about 5, both beyond the seed spread, but label smoothing 0.3 does not lower it (−0.7 ± 2
# points), so "all three lower memorization" cannot be confirmed: the claim is *within
# noise*. Dropout 0.5 also stops the network from fitting its labels (train 48%) and raises
# test accuracy (51% against 47%); weight decay leaves 96% fitted and does not help the test
# set.

# %% [markdown]
# ## 4. The RLP regularizer: λ sweep, last layer vs all layers

# %%
sweep, lam_layers = results["lambda_sweep"], results["lambda_layers"]
save_table(sweep, "lambda_sweep", STUDY, scale)
lams = sorted(sweep["lam"].unique())
ticks = [f"{v:g}" for v in lams]
fig, axes = figure("grid", 2, 2)
axes = axes.ravel()
for where, style in (("last", "-"), ("all", "--")):
    d = sweep[sweep["regularize"] == where]
    ran = sorted(d["lam"].unique())  # all layers: λ = 0 and the largest λ only
    xs = [lams.index(v) for v in ran]
    for column, marker, colour, label in (("test_acc", "o", "C0", "test"),
                                          ("train_acc", "s", "C1", "train")):
        stats = mean_sd(d, "lam", column).loc[ran]
        axes[0].errorbar(xs, 100 * stats["mean"], 100 * stats["std"], fmt=marker + style,
                         color=colour, capsize=2, label=f"{label} ({where})")
    stats = mean_sd(d, "lam", f"rlp_{last}").loc[ran]
    axes[1].errorbar(xs, 100 * stats["mean"], 100 * stats["std"], fmt="^" + style, color="C2",
                     capsize=2, label=f"{last}, regularized: {where}")
reference_line(axes[1], 100 * chance, "chance")
for ax in axes[:2]:
    ax.set_xticks(np.arange(len(lams)), ticks)
    ax.set_xlabel("λ")
    ax.legend(fontsize=6)
axes[0].set_ylabel("class accuracy (%)")
axes[1].set_ylabel("random-label train acc. (%)")
for ax, where in zip(axes[2:], ("last", "all"), strict=True):
    d = lam_layers[lam_layers["regularize"] == where]
    for i, lam in enumerate(lams):
        if lam not in set(d["lam"]):
            continue
        stats = mean_sd(d[d["lam"] == lam], "layer", "rlp_acc")
        ax.errorbar(np.arange(len(stats)), 100 * stats["mean"], 100 * stats["std"], fmt="o-",
                    capsize=2, color=f"C{i}", label=f"λ = {lam:g}")
    reference_line(ax, 100 * chance, "chance")
    ax.set_xticks(np.arange(len(layers)), layers)
    ax.set_xlabel("probed layer")
    ax.set_ylabel("random-label train acc. (%)")
    ax.set_title(f"regularized: {'last layer' if where == 'last' else 'all layers'}")
    ax.legend(fontsize=6)
savefig(fig, "fig5_rlp_regularizer", STUDY, scale, data=results["dataset"])
print(sweep.groupby(["regularize", "lam"])[["train_acc", "test_acc", f"rlp_{last}"]]
      .agg(["mean", "std"]).round(4).to_string())
print("drop at the regularized layer:", measured["regularizer_works"]["drop"])
print("earlier-layer change, last only:", measured["shift"])
print("earlier-layer change, all layers:", measured["all_layers"])

# %% [markdown]
# Top: train and test accuracy (left) and last-layer random-label accuracy (right) against λ,
# regularizing the last probed layer (solid) or all of them (dashed, λ = 0 and the largest λ
# only); bottom: random-label accuracy per layer for each λ (mean ± sd over seeds). The rules
# compare λ = 0 with the largest λ, and λ = 100 wrecks the network: it fits 14% of its
# training labels and reaches 16% test accuracy. Its drop of 16 points at the last layer
# (regularizer_works) and the fall of every earlier layer (shift does not hold; all-layer
# regularization lowers every layer further) are therefore measured on a network that no
# longer learns, not a clean test of the paper's shift. λ = 10 is the informative setting:
# the network still fits 98% (96% of the flipped labels) and the last head drops from 21% to
# 9%, *below* chance 10% (the extractor steers it to wrong answers, which still encodes the
# random labels), while no earlier layer gains: act1 falls from 31% to 25%, act2 from 40% to
# 34%, act3–act5 by about a point. No shift at λ = 10 either, then; a λ grid between 10 and
# 100 would be the next thing to run.

# %% [markdown]
# ## 5. Sampling: dataset fraction and long tail

# %%
fr, lt = results["fractions"], results["long_tail"]
save_table(fr, "fractions", STUDY, scale)
save_table(lt, "long_tail", STUDY, scale)
best = results["best_lambda"]
change = (fr[fr["lam"] == best].set_index(["n_train", "seed"])["test_acc"]
          - fr[fr["lam"] == 0].set_index(["n_train", "seed"])["test_acc"]).reset_index()
fig, (ax1, ax2) = figure("wide", 1, 2)
stats = mean_sd(change, "n_train", "test_acc").sort_index()
ax1.errorbar(stats.index, 100 * stats["mean"], 100 * stats["std"], fmt="o-", capsize=2,
             label=f"test acc. change, λ = {best:g} vs 0")
ax1.plot(change["n_train"], 100 * change["test_acc"], ".", color="C0", alpha=0.5)
ax1.axhline(0, color="0.6", linewidth=0.8)
ax1.set_xscale("log")
ax1.set_xticks(stats.index, [str(n) for n in stats.index])
ax1.minorticks_off()
ax1.set_xlabel("training samples")
ax1.set_ylabel("test accuracy change (points)")
ax1.legend(fontsize=6)
per_class = lt.pivot_table(index="class", columns="lam", values="test_acc", aggfunc="mean")
counts = lt[lt["lam"] == 0].groupby("class")["train_count"].first()
delta = 100 * (per_class[best] - per_class[0.0])
ax2.plot(counts, delta, "o")
for c in counts.index:
    ax2.annotate(str(c), (counts[c], delta[c]), fontsize=6)
ax2.axhline(0, color="0.6", linewidth=0.8)
ax2.set_xscale("log")
ax2.set_xticks(sorted(set(counts)), [str(n) for n in sorted(set(counts))], fontsize=6)
ax2.minorticks_off()
ax2.set_xlabel("training samples of the class (long-tailed subset)")
ax2.set_ylabel(f"test acc. change, λ = {best:g} vs 0 (points, mean over seeds)")
savefig(fig, "fig6_sampling", STUDY, scale, data=results["dataset"])
print(fr.groupby(["n_train", "lam"])[["train_acc", "test_acc"]].agg(["mean", "std"]).round(4))
print("sampling:", measured["sampling"], "| tails:", measured["tails"])

# %% [markdown]
# Left: test-accuracy change from the best λ against the training-set size (dots: seeds);
# right: per-class test-accuracy change in the long-tailed subset against each class's
# training count (labels are class ids, means over seeds). The regularizer's effect is more
# positive with all 1,000 samples than with 300 (a difference of about 4 points, beyond the
# spread), as the paper's sampling claim says. The long-tail comparison of head and tail
# classes is dominated by seed-to-seed variation of classes with a handful of samples: within
# noise.

# %% [markdown]
# ## 6. Label noise

# %%
noise_runs = results["noise"]
save_table(noise_runs, "noise", STUDY, scale)
fig, ax = figure("single")
for i, (rate, d) in enumerate(noise_runs.groupby("noise")):
    stats = mean_sd(d, "lam", "test_acc").sort_index()
    x = np.arange(len(stats))
    ax.errorbar(x, 100 * stats["mean"], 100 * stats["std"], fmt="o-", capsize=3,
                color=f"C{i}", label=f"{100 * rate:.0f}% noise (mean ± sd)")
    for j, lam in enumerate(stats.index):
        ax.plot(np.full(len(d[d["lam"] == lam]), x[j]) + 0.08,
                100 * d[d["lam"] == lam]["test_acc"], ".", color=f"C{i}", alpha=0.5)
    ax.set_xticks(x, [f"{v:g}" for v in stats.index])
ax.set_xlabel("λ (last-layer RLP regularizer)")
ax.set_ylabel("test accuracy (%)")
ax.legend(fontsize=6)
savefig(fig, "fig7_label_noise", STUDY, scale, data=results["dataset"])
print(noise_runs.groupby(["noise", "lam"])[["test_acc", "train_acc", "noisy_fit", f"rlp_{last}"]]
      .agg(["mean", "std"]).round(4).to_string())
print("noise:", measured["noise"])

# %% [markdown]
# Test accuracy (clean test labels) against λ at the default 40% label noise; dots are single
# seeds, error bars one standard deviation over seeds. These are the λ sweep's own runs, shown
# against the noise claim: the best λ gains about one point of test accuracy, less than its
# seed spread, so the paper's "helps consistently under label noise" is *within noise* at this
# scale: at λ = 10 the network still fits 96% of the flipped labels, so little of the
# memorization that costs test accuracy is removed.

# %% [markdown]
# ## Claims
# Rules were fixed before any run (issue 11 fixed the preconditions and the noise rule). A
# verdict is *precondition failed* when what the rule presupposes did not happen, and *within
# noise* when the difference it compares does not exceed two standard errors over the three
# seeds ("ours" shows mean ± 2 SE). The full preset is the paper's test.

# %%
table = evaluate(CLAIMS, measured)
write(table, STUDY, scale)
table[["id", "ours", "rule", "verdict"]]

# %% [markdown]
# Summary at this scale: the setting memorizes (both models fit 40% label noise completely;
# the SmallCNN's last block carries 11 points more random-label information than at
# initialisation, the MLP's last layer 7). Random-label accuracy grows with depth in both
# models, also with capacity-matched heads. The RLP regularizer lowers memorization where it
# is applied and helps more on the full training set than on 30% of it, although the largest
# λ, on which the rules are fixed, breaks training altogether. Memorization does not rise
# before train and test diverge, and last-layer regularization does not shift memorization
# to earlier layers. Label smoothing, the noise gain and the long-tail effect are within the
# seed spread.
