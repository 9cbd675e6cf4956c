# %% [markdown]
# # Fisher rank inflation under label noise
#
# Bathula & Joshi, *Fisher Rank Inflation: A Spectral Signature of Memorization under
# Label Noise* (arXiv 2607.12438) ask whether memorising corrupted labels leaves a trace in
# the spectrum of per-example gradients. Their claims: the effective rank of the centred
# last-layer gradient scatter **inflates** during training under label noise, **peaks**
# when the network turns from learning structure to memorising, then **collapses**; the
# peak grows monotonically with the corruption rate; leave-one-out (LOO) attribution at
# the peak is enriched in corrupted examples (top-100: 69-96% corrupted), a first-order
# formula matches exact LOO for CNNs (Spearman > 0.96); it is a signature, not a detector
# (AUROC about 0.6-0.8); hard clean examples contribute little; inflation can begin before
# test accuracy degrades.
#
# ## Method
# For example $i$ with last-layer input $h_i\in\mathbb{R}^d$, logits $z_i$ and the label
# as trained $y_i$ (noisy), the cross-entropy gradient of the last affine layer is, in
# closed form,
#
# $$g_i = r_i \otimes \tilde h_i,\qquad r_i=\mathrm{softmax}(z_i)-e_{y_i},\quad
# \tilde h_i=[h_i;1]\in\mathbb{R}^{d+1}.$$
#
# Since $\mathbf 1^\top r_i=0$, the $g_i$ span at most $(C-1)(d+1)$ of the $D=C(d+1)$
# dimensions. With $c_i=g_i-\bar g$ and $S=\sum_i c_ic_i^\top$ with eigenvalues
# $\lambda_k$ and $p_k=\lambda_k/\sum_j\lambda_j$,
#
# $$\mathrm{er}(S)=\exp\Big(-\sum_k p_k\log p_k\Big).$$
#
# Removing example $i$ *from the statistic* (not from training; this is not influence)
# and recentring gives exactly $S_{-i}=S-\alpha\,c_ic_i^\top$ with $\alpha=n/(n-1)$, so
# with $z=V^\top c_i$ the eigenvalues of $S_{-i}$ are the roots $t$ of the secular equation
#
# $$1-\alpha\sum_k \frac{z_k^2}{\lambda_k-t}=0,$$
#
# one between each pair of consecutive $\lambda_k$. We solve it for every example from
# one eigendecomposition (LAPACK dlaed4's rational interpolation, in a small C kernel) and
# get the exact $\Delta_i=\mathrm{er}(S)-\mathrm{er}(S_{-i})$; the first-order version is
#
# $$\Delta_i^{(1)}=\alpha\sum_k\beta_k z_k^2,\qquad
# \beta_k=\frac{\partial\,\mathrm{er}}{\partial\lambda_k}=\frac{\mathrm{er}}{T}(-\log p_k-H),$$
#
# which sums to zero over examples. er is tracked every epoch on a fixed scatter set of
# training examples (eval mode, no augmentation, noisy labels); the peak is the argmax over
# epochs $\geq 1$ (epoch 0 is inflated by the random initialisation) and attribution is
# computed there. Everything spectral is float64.
#
# ## What differs from the paper
# The paper trains SmallCNN, ResNet18 and ViTs on CIFAR-10/100 and CIFAR-10N with 5 seeds.
# Here (small scale, 2 CPU cores) we use a 2,000-image Fashion-MNIST subset, an MLP
# 784-256-64-10 (so $D=650$, rank bound $585$), the seeds under the setup cell below, Adam on
# standardized inputs (the training split's mean and standard deviation), a 1,000-example
# scatter set, and a short SmallCNN run at 40% noise on each of the first `arch_seeds` seeds
# (the CNN the `first_order` claim is judged on). Each run trains until it fits its labels
# (train accuracy ≥ 99%, ≥ 95% of the flipped labels, on the scatter set) and 10 epochs
# more, at most 100 epochs.
# The full preset (`params/full`) holds the paper's settings. cleanlab's confident learning
# is not part of the comparison (not installed; it is AGPL). Scores are judged against the
# true flip mask.
#
# **How the claims are judged.** Every claim is measured on each seed's run and read as the
# mean ± the half-width of its 95% Student-t interval over the confirmatory seeds (the values
# shown beside two rules, the MLP's first-order agreement and the clean run's hardest-decile
# share, and those rules' earlier versions also read the seeds of an attribution arm, sections
# 4 and 5; which seeds, under the setup cell below); a verdict
# whose threshold lies inside that interval is *within noise*. No rule of this study has a
# smallest effect of interest δ (an equivalence verdict): the paper gives no number for one.
# Each rule also names what it presupposes (the noisy labels were fitted, er peaks and then
# declines, test accuracy degrades); where that fails the verdict is *precondition failed*,
# never "holds", with what the rule alone would read beside it. The rules were registered
# (`register/03_fisher_rank_inflation.yaml`) after a pilot and before these seeds were run;
# the claims section says what changed.

# %% tags=["parameters"]
# The scale: "smoke", "small" or "full", each its own preset
# (params/<scale>/03_fisher_rank_inflation.yaml). To change a setting, add a line here,
# e.g. `seeds = [0, 1]`, and run this cell and the ones below; a line you
# delete no longer counts. papermill injects every setting after this cell.
scale = "small"

# %%
# memlib first: importing it pins the instruction set numpy and torch then use
from memlib.pipeline import notebook_config, study_results

# isort: split
import numpy as np
import pandas as pd
from IPython.display import Markdown, display
from matplotlib.ticker import MaxNLocator

from memlib import DEFAULT_SCALE
from memlib.book import interval_alone
from memlib.claims import Estimate, evaluate, write
from memlib.plotting import figure, paper_values, reference, reference_line, savefig
from memlib.prose import (
    claims_markdown,
    cost_of,
    count_word,
    entry_seconds,
    explanations,
    listing,
    num,
    pct,
    pct_span,
    pm,
    run_time,
    seed_history,
    seeds_phrase,
    span,
    spread_phrase,
)
from memlib.studies.fisher import CLAIMS, collapse_gap, measure
from memlib.tables import save_table

STUDY = "03_fisher_rank_inflation"
config = notebook_config("fisher", globals())
# At full scale this reads what `memlib run` computed (see the README) and names the
# command to run if a result is missing; below full scale it computes, cached.
results = study_results("fisher", config, scale)
pd.set_option("display.width", 160)
pd.set_option("display.max_columns", 30)
# the seeds this run ran (its Config) and the register's history, for the prose below
seed_words = seed_history("fisher", config)
# each claim's row (verdict, note), for the prose beside its figure; the claims section
# below shows and writes the table
verdicts = evaluate(CLAIMS, measure(results, config)).set_index("id")


def replicates_short(claim: str) -> str:
    """A sentence for a row read *within noise* on fewer replicates than registered: what
    its interval alone reads; '' for any other row."""
    row = verdicts.loc[claim]
    alone = interval_alone(str(row["note"]))
    return (f"The `{claim}` row nevertheless reads *{row['verdict']}*: these runs fall short "
            f"of the replicate count its power analysis registered, and {alone}."
            if alone else "")

# %% tags=["remove-input"]
display(Markdown(f"""**Seeds.** This run ran {seed_words["ran"]}, """ + (
    f"""and the attribution arm {seeds_phrase(config.attribution_seeds)} of its own"""
    if config.attribution_seeds else "and no attribution arm")
    + f""". The rules were registered after a pilot on seeds {seed_words["pilots"]}."""))

# %% [markdown]
# ## 1. Math checks
# The identities the method rests on, on synthetic features: closed form vs `torch.func`
# per-sample gradients, the rank-one downdate, fast exact LOO vs a direct eigensolve per
# example, the first-order attributions summing to zero, Gram vs $D$-space spectra, and the
# rank bound.

# %%
checks = results["checks"]
save_table(checks, "math_checks", STUDY, scale)
assert checks["passed"].all(), checks
checks

# %% [markdown]
# ## 2. Inflation and collapse
# er of the scatter set per epoch (mean ± sd over seeds) and, for each corruption rate,
# how well the network fits the clean and the corrupted training labels, and test accuracy.

# %%
curves = results["curves"]
main = curves[(curves["model"] == config.model) & (curves["noise"] == "symmetric")]
fig, axes = figure("wide", 1, 2)
for corruption, group in main.groupby("corruption"):
    stats = group.groupby("epoch")["er"].agg(["mean", "std"]).fillna(0)
    line, = axes[0].plot(stats.index, stats["mean"], label=f"{corruption:.0%} noise")
    axes[0].fill_between(stats.index, stats["mean"] - stats["std"],
                         stats["mean"] + stats["std"], color=line.get_color(), alpha=0.2)
    fits = group.groupby("epoch")[["clean_fit", "noisy_fit", "test_acc"]].mean()
    axes[1].plot(fits.index, fits["test_acc"], color=line.get_color(),
                 label=f"test, {corruption:.0%}")
    if corruption > 0:
        axes[1].plot(fits.index, fits["noisy_fit"], color=line.get_color(), linestyle=":",
                     label=f"noisy labels fitted, {corruption:.0%}")
axes[0].set(xlabel="epoch", ylabel="effective rank er(S)", title="er of last-layer gradients")
reference_line(axes[1], 0.1, "chance")
axes[1].set(xlabel="epoch", ylabel="accuracy / fraction", title="fit of noisy labels and test")
# Legends under the panels, never on the curves.
axes[0].legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
axes[1].legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
# tall enough for the legends' rows under the panels: a shorter figure collapses its axes
fig.set_figheight(5.6)
savefig(fig, "fig1_inflation_collapse", STUDY, scale, data=config.dataset)

# %% [markdown]
# **Figure 3.1.** er of the scatter set over training per corruption rate (mean ± sd over
# seeds), with the network's fit of its clean and corrupted training labels and its test
# accuracy.

# %%
# How much of the flipped labels each run fits at its er peak and at its last epoch.
run_keys = ["model", "noise", "corruption", "seed"]
fit_at = curves.merge(results["summary"][[*run_keys, "peak_epoch"]], on=run_keys)
fit_at = fit_at[fit_at["epoch"] == fit_at["peak_epoch"]][[*run_keys, "noisy_fit"]]
fit_last = curves[curves["epoch"] == curves.groupby(run_keys)["epoch"].transform("max")]
summary = (results["summary"]
           .merge(fit_at.rename(columns={"noisy_fit": "noisy_fit_at_peak"}), on=run_keys)
           .merge(fit_last[[*run_keys, "noisy_fit"]]
                  .rename(columns={"noisy_fit": "noisy_fit_last"}), on=run_keys))
save_table(summary, "runs", STUDY, scale)
runs_csv = f"figures/{'' if scale == DEFAULT_SCALE else scale + '/'}{STUDY}/runs.csv"
# seed means per model and corruption rate; every run is a row of runs.csv
(summary.assign(**{c: pd.to_numeric(summary[c]) for c in ("noisy_fit_at_peak", "noisy_fit_last")})
 .groupby(["model", "corruption"])
 .agg(runs=("seed", "size"), peak_epoch=("peak_epoch", "mean"), er_epoch1=("er_epoch1", "mean"),
      er_peak=("er_peak", "mean"), er_last=("er_last", "mean"),
      rank_at_peak=("rank_at_peak", "mean"), rank_bound=("rank_bound", "first"),
      noisy_fit_at_peak=("noisy_fit_at_peak", "mean"),
      noisy_fit_last=("noisy_fit_last", "mean"), fit_epoch=("fit_epoch", "mean"),
      epochs_trained=("epochs_trained", "mean"), test_acc_best=("test_acc_best", "mean"),
      test_acc_last=("test_acc_last", "mean"))
 .round(2))

# %% tags=["remove-input"]
runs_main = summary[(summary["model"] == config.model) & (summary["noise"] == "symmetric")]
noisy_runs = runs_main[runs_main["corruption"] > 0]
clean_runs = runs_main[runs_main["corruption"] == 0]
gaps = [collapse_gap(g.sort_values("epoch")["er"])
        for _, g in main[main["corruption"] > 0].groupby(["corruption", "seed"])]
after_test = noisy_runs["peak_epoch"] - noisy_runs["test_peak_epoch"]
before_fit = pd.to_numeric(noisy_runs["fit_epoch"], errors="coerce") - noisy_runs["peak_epoch"]
# The claim's precondition: every noisy run met its declared fit (its fit record).
dipped = pd.to_numeric(noisy_runs["noisy_fit_last"]) < 0.95
collapse_check = ("can be checked here: every noisy run met its declared fit (train accuracy "
                  "≥ 99% with ≥ 95% of its flipped labels) within its epoch budget. The fit "
                  "is declared at the run's fit epoch (`fit_epoch`); the fraction fitted can "
                  "dip in the epochs after it"
                  + (f", and at the last epoch {int(dipped.sum())} of the {len(dipped)} noisy "
                     "runs hold fewer than 95% of their flipped labels" if dipped.any() else "")
                  if noisy_runs["fit_epoch"].notna().all() else
                  "therefore cannot be checked within this budget: the `inflation_collapse` "
                  "claim's precondition (every noisy run meets its declared fit) fails, and "
                  "the verdict says so rather than 'holds'")
stopping = (f"runs stop {config.epochs_after_fit} epochs after their declared fit, at most "
            f"{config.epochs}" if config.epochs_after_fit is not None else
            f"every run trains all {config.epochs} epochs")
display(Markdown(f"""
Solid lines: er per corruption rate; the dotted lines on the right show how much of the
corrupted labels the network fits. Under noise er peaks at {span(noisy_runs["er_peak"], 0)}
at epoch {span(noisy_runs["peak_epoch"], 0)} and then falls (the claim's measure, the
smaller of the rise from epoch 1 and the fall to the last epoch relative to the peak, is
{span(gaps, 2)} over the noisy runs); the clean run peaks at
{span(clean_runs["er_peak"], 1)} and ends at {span(clean_runs["er_last"], 1)}. At the peak
{pct_span(noisy_runs["noisy_fit_at_peak"])} of the flipped labels are fitted, and at each
run's last epoch ({span(noisy_runs["epochs_trained"], 0)}; {stopping})
{pct_span(noisy_runs["noisy_fit_last"])} (the table above gives seed means, columns
`noisy_fit_at_peak`, `noisy_fit_last`, `fit_epoch` and `epochs_trained`; every run is a row of
`{runs_csv}`). The paper's "collapse once the noise is fitted" {collapse_check}.
{"Every noisy run's gap clears the rule's bar of 0.2. " if min(gaps, default=0) >= 0.2 else ""}
{replicates_short("inflation_collapse")}
Where the peak falls: {span(after_test, 0)} epochs after the epoch of best test accuracy
and {span(before_fit, 0)} epochs before the declared fit of the noisy labels (the
`peak_at_turn` claim: between learning the structure and having memorised the noise).
"""))

# %% [markdown]
# ## 3. Peak er vs corruption

# %%
ours = summary[(summary["model"] == config.model) & (summary["noise"] == "symmetric")]
peaks = ours.groupby("corruption")["er_peak"].agg(["mean", "std"]).fillna(0)
PAPER = {c.id: c.paper for c in CLAIMS}  # the paper's values, as its claims state them
# the paper's peak er, clean and at its highest corruption rate (a spread after "+-" left out)
paper_er, (paper_rate,) = paper_values(PAPER["monotone_peak"], ""), paper_values(
    PAPER["monotone_peak"])
fig, ax = figure("single")
ax.errorbar(peaks.index * 100, peaks["mean"], yerr=peaks["std"], marker="o", capsize=3,
            label=f"ours ({config.model}, {config.dataset})")
ax.plot([0, paper_rate], paper_er, "s", color="0.35", label=f"paper (clean, {paper_rate:g}%)")
ax.set(xlabel="corruption (%)", ylabel="peak er", title="peak effective rank")
ax.legend(fontsize="small")
savefig(fig, "fig2_peak_er_vs_corruption", STUDY, scale, data=config.dataset)
peaks.round(2)

# %% [markdown]
# **Figure 3.2.** Peak er against the corruption rate, per seed and mean.

# %% tags=["remove-input"]
steps = [(lo, hi) for lo, hi in zip(peaks.index, peaks.index[1:])]


def step_text(lo: float, hi: float) -> str:
    """The change of peak er from one corruption rate to the next, paired by seed."""
    a, b = (ours[ours["corruption"] == c].sort_values("seed")["er_peak"].to_numpy()
            for c in (lo, hi))
    d = Estimate.of(b - a)
    return f"{lo:.0%} → {hi:.0%}: {pm(d, 1)} ({spread_phrase(d)})"


ratio = (peaks["mean"].iloc[-1] / peaks["mean"].iloc[0]) if len(peaks) > 1 else np.nan
display(Markdown(f"""
Mean ± sd over seeds of the peak er: {listing(f"{num(r['mean'], 1)} ± {num(r['std'], 1)} at "
f"{c:.0%} noise" for c, r in peaks.iterrows())}. Steps, paired by seed (mean ± 95% interval):
{listing(step_text(lo, hi) for lo, hi in steps) or "none (one corruption rate)"}. The paper's
values (CIFAR-10, SmallCNN, grey squares: {num(paper_er[0], 1)} clean, {num(paper_er[1], 1)}
at {paper_rate:g}% noise, a factor {num(paper_er[1] / paper_er[0], 1)}) are a different model
and dataset, shown only for scale; ours grows by a factor {num(ratio, 1)} from
{peaks.index[0]:.0%} to {peaks.index[-1]:.0%} noise.
"""))

# %% [markdown]
# ## 4. Attribution at the peak and other label-error signals
# All scores come from the same runs: exact and first-order LOO $\Delta_i$, the loss at
# the peak and at an early epoch, the gradient norm $\|g_i\|$, the area under the margin
# (lower = more suspicious) and random scores.

# %%
signals = results["signals"]
at = signals[(signals["model"] == config.model) & (signals["noise"] == "symmetric")
             & (signals["corruption"] == config.attribution_corruption)]
table = (at.groupby("signal")[["auroc", "auprc", "precision_at_100", "precision_at_npos",
                               "enrichment", "seconds"]].mean()
         .sort_values("auroc", ascending=False))
save_table(table.reset_index(), "signals", STUDY, scale)
table.round(3)

# %%
examples = results["examples"]
ex = examples[(examples["model"] == config.model) & (examples["noise"] == "symmetric")
              & (examples["corruption"] == config.attribution_corruption)
              & (examples["seed"] == config.seeds[0])]
fig, axes = figure("wide", 1, 3, gridspec_kw={"width_ratios": (2, 2, 1.4)})
bins = np.linspace(ex["delta_exact"].quantile(0.005), ex["delta_exact"].quantile(0.995), 50)
for flipped, name in ((False, "clean"), (True, "corrupted")):
    axes[0].hist(ex.loc[ex["flipped"] == flipped, "delta_exact"], bins=bins, alpha=0.6,
                 label=name)
axes[0].set(xlabel=r"exact LOO $\Delta_i$ (er units)", ylabel="examples",
            title=f"attribution at the peak, {config.attribution_corruption:.0%} noise")
# four ticks at most: the histogram's narrow range would otherwise run its labels together
axes[0].xaxis.set_major_locator(MaxNLocator(4))
axes[0].legend(loc="center right", fontsize="small", handlelength=1)
# Corrupted first, clean on top: the clean examples crowd near zero and would be hidden.
for flipped, name, colour in ((True, "corrupted", "C1"), (False, "clean", "C0")):
    part = ex[ex["flipped"] == flipped]
    axes[1].scatter(part["delta_exact"], part["delta_first"], s=5, color=colour, alpha=0.6,
                    linewidths=0, label=name)
lims = [ex[["delta_exact", "delta_first"]].min().min(), ex[["delta_exact", "delta_first"]]
        .max().max()]
axes[1].plot(lims, lims, color="0.35", linestyle="--", linewidth=1, label="y = x")
axes[1].set(xlabel=r"exact $\Delta_i$", ylabel=r"first-order $\Delta_i^{(1)}$",
            title="first order vs exact")
axes[1].locator_params(axis="both", nbins=5)
axes[1].legend(markerscale=2, loc="lower right")
# The enrichment claim's measure: the share of corrupted examples among the 100 largest
# exact Delta_i, per seed, against the range of the paper's models (its first two values:
# the lowest and the highest; the third is CIFAR-10N's, a row of its own)
exact_at = at[at["signal"] == "LOO er attribution (exact)"]
purity = 100 * exact_at["precision_at_100"]
axes[2].plot(np.zeros(len(purity)), purity, "o", color="C1", alpha=0.6, label="each seed")
axes[2].plot([0], [purity.mean()], "_", color="C1", ms=20, mew=2, label="mean")
lowest, highest = paper_values(PAPER["enrichment"])[:2]
reference(axes[2], (lowest, highest), "its models")  # the prose gives the numbers
base = (exact_at["precision_at_100"] / exact_at["enrichment"])[exact_at["enrichment"] > 0]
if len(base):  # purity if the top 100 were drawn at random
    reference_line(axes[2], 100 * base.mean(), "base rate")
axes[2].set(xlim=(-1, 1), xticks=[], ylim=(0, 100), ylabel="top-100 purity (%)",
            title="top 100 by exact Δ")
# under the panel (its x axis has no ticks): inside, it would cover the base-rate line
axes[2].legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.03))
fig.set_figheight(4.2)  # room for that legend
savefig(fig, "fig3_attribution", STUDY, scale, data=config.dataset)

# %% [markdown]
# **Figure 3.3.** Attribution at the er peak: exact LOO $\Delta_i$ of clean and corrupted
# examples (left), the first-order $\Delta_i$ against the exact one (middle), and the
# top-100 purity, the share of corrupted examples among the 100 largest exact $\Delta_i$ of
# each seed (right): the hatched band is the paper's range over its models, from its lowest
# (ViT) to its highest (SmallCNN; legend "paper: …", read from the claim), the dashed line
# the share of corrupted examples in the set, which a random top 100 would hold.

# %% tags=["remove-input"]
below = (ex["delta_first"] < ex["delta_exact"]).mean()
rho_first = summary[(summary["model"] == config.model)
                    & (summary["corruption"] == config.attribution_corruption)][
    "spearman_exact_first"]
arm_runs = results["arm_summary"]
rho_arm = arm_runs[arm_runs["corruption"] == config.attribution_corruption][
    "spearman_exact_first"] if len(arm_runs) else pd.Series(dtype=float)
rho_cnn = summary[summary["model"].isin(["smallcnn", "resnet18"])
                  & (summary["corruption"] == config.attribution_corruption)][
    "spearman_exact_first"]
side = ("below" if below > 0.5 else "above")
at_rate = summary[summary["corruption"] == config.attribution_corruption]
direct_error = at_rate["direct_max_abs_error"].max()
# how much of its flipped labels each model fits at its last epoch: the CNN runs the
# first_order row is judged on are short, and may not have memorised them
cnn_fit = pd.to_numeric(at_rate[at_rate["model"].isin(["smallcnn", "resnet18"])]
                        ["noisy_fit_last"])
main_fit = pd.to_numeric(at_rate[at_rate["model"] == config.model]["noisy_fit_last"])
(cnn_bar,) = paper_values(PAPER["first_order"], "")
cnn_caveat = (
    f"The row reads *{verdicts.loc['first_order', 'verdict']}* on CNN runs that never "
    f"memorised their labels: after their {config.arch_epochs} epochs they fit "
    f"{pct_span(cnn_fit)} of the flipped labels, while the {config.model}, which fits "
    f"{pct_span(main_fit)} of them, has a mean ρ of {num(rho_first.mean(), 3)}, "
    f"{'below' if rho_first.mean() < cnn_bar else 'above'} the paper's {cnn_bar:g}."
    if len(cnn_fit) and cnn_fit.max() < 0.5 and config.model not in ("smallcnn", "resnet18")
    else "")
# the enrichment rule's bars: precision@100 >= 0.69 and enrichment > 1.5
every_seed_above = bool(len(exact_at)) and bool(
    ((exact_at["precision_at_100"] >= 0.69) & (exact_at["enrichment"] > 1.5)).all())


def arm_phrase(what: str, reads: str) -> str:
    """Which seeds `what` (a value shown beside a claim) reads (`reads` of each), and what the
    attribution arm is, where one ran."""
    if not config.attribution_seeds:
        return f"{what} reads the {len(config.seeds)} seeds."
    return (f"{what} reads {reads} of these {len(config.seeds)} seeds and of the "
            f"{len(config.attribution_seeds)} seeds of an attribution arm "
            f"({len(config.seeds) + len(config.attribution_seeds)} in all), which run only the "
            f"clean run and the run at {config.attribution_corruption:.0%} noise; the earlier "
            "versions of `first_order` and `difficulty_control` were judged on them, and no "
            "rule of this version decides on them.")


display(Markdown(f"""
Left: the exact attribution of the clean and the corrupted examples at the er peak (first
seed); middle: first order against exact, one point per example; right: the top 100 by exact
$\\Delta_i$ are {pct_span(exact_at["precision_at_100"])} corrupted over the seeds, against the
paper's {lowest:g}–{highest:g}% over its models{"; every seed clears the `enrichment` rule's "
"bars (precision@100 ≥ 0.69, enrichment > 1.5)" if every_seed_above else ""}.
{replicates_short("enrichment")} The first-order value sits
{side} the line y = x for {pct(max(below, 1 - below))} of the examples: it mostly
{"underestimates" if side == "below" else "overestimates"} the exact $\\Delta_i$. How alike
the two rank the examples, which is what attribution by ranking needs: Spearman
ρ(exact, first order) {num(rho_first.mean(), 3)} on average ({span(rho_first, 3)}) over the
confirmatory seeds
{f"and {span(rho_arm, 3)} over the attribution arm's" if len(rho_arm) else ""}. The paper's
figure (> 0.96) is for CNNs, so the `first_order` claim is judged on the CNN runs, one value per
seed: {span(rho_cnn, 3) if len(rho_cnn) else "none ran"} over
{len(rho_cnn)} CNN run{"" if len(rho_cnn) == 1 else "s"}. {cnn_caveat} The fast exact LOO
matches a direct eigensolve for every example to {direct_error:.0e} er or better in every run at
this noise rate.
{arm_phrase("The MLP's value beside it", f"the {config.attribution_corruption:.0%} noise run")}
"""))

# %%
fig, ax = figure("wide")
order = table.index
ax.barh(range(len(order)), table["auroc"], color="C0")
ax.set_yticks(range(len(order)), order)
ax.invert_yaxis()
reference_line(ax, 0.5, "chance (AUROC 0.5)", axis="x")
low, high = paper_values(PAPER["not_detector"], "")[0]
reference(ax, (low, high), f"AUROC range ({low:g}–{high:g})", axis="x")
ax.set(xlabel="AUROC for the corrupted examples", xlim=(0, 1),
       title=f"label-error signals, {config.attribution_corruption:.0%} noise (seed mean)")
ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
savefig(fig, "fig4_signals", STUDY, scale, data=config.dataset)

# %% [markdown]
# **Figure 3.4.** AUROC of each label-error signal for the corrupted examples (mean over
# seeds); the hatched band is the paper's range (legend "paper: …", read from the claim),
# the dashed line chance (0.5).

# %% tags=["remove-input"]
loo = "LOO er attribution (exact)"
ranked = table["auroc"].sort_values(ascending=False)
better = [n for n in ranked.index if ranked[n] > ranked[loo] and n != loo]
per_seed = Estimate.of(at[at["signal"] == loo].sort_values("seed")["auroc"])
low, high = per_seed.mean - per_seed.half_width, per_seed.mean + per_seed.half_width
where = ("cannot be placed against" if per_seed.n < 2 else "lies inside" if 0.6 <= low
         and high <= 0.8 else "lies above" if low > 0.8 else "lies below" if high < 0.6
         else "straddles an edge of")
display(Markdown(f"""
The table and bars compare every signal on the same runs, with its extra cost in seconds
(losses and AUM come free with training; LOO needs one eigendecomposition plus the secular
solves). The exact LOO attribution reaches AUROC {num(ranked[loo], 2)} (first order
{num(ranked.get("LOO er attribution (first order)", np.nan), 2)}); ranked above it:
{listing(f"{n} ({num(ranked[n], 2)})" for n in better) if better else "no other signal"}.
Their top 100 hold {pct_span(table.drop(index="random", errors="ignore")["precision_at_100"])}
corrupted examples. The paper calls the er attribution a signature of memorization, not a
detector (AUROC about 0.6–0.8); over seeds ours is
{pm(per_seed, 2, signed=False)}: its interval {where} the paper's range.
"""))

# %% [markdown]
# ## 5. Clean-difficulty control
# Difficulty = per-example loss of the clean-label run with the same seed at its last
# epoch. Mean $\Delta$ of clean and corrupted examples within each difficulty decile, and
# where the clean run's top-100 $\Delta$ fall.

# %%
difficulty = results["difficulty"]
save_table(difficulty, "difficulty_control", STUDY, scale)
fig, axes = figure("wide", 1, 2)
noisy = difficulty[difficulty["corruption"] == config.attribution_corruption]
for flipped, name in ((False, "clean examples"), (True, "corrupted examples")):
    d = noisy[noisy["flipped"] == flipped].groupby("decile")["mean_delta"].mean()
    axes[0].plot(d.index, d.to_numpy(), marker="o", label=name)
axes[0].axhline(0, color="0.6", linewidth=0.8)
axes[0].set(xlabel="difficulty decile (10 = hardest)", ylabel=r"mean exact $\Delta_i$",
            title=f"{config.attribution_corruption:.0%} noise run")
axes[0].legend()
clean = difficulty[(difficulty["corruption"] == 0.0)]
share = clean.groupby(["seed", "decile"])["clean_top_share"].first().groupby("decile").mean()
axes[1].bar(share.index, share.to_numpy())
reference_line(axes[1], 0.1, "uniform share")
axes[1].set(xlabel="difficulty decile (10 = hardest)", ylabel="share of top-100 Δ",
            title="clean run: the top-100 by decile")
axes[1].legend()
for ax in axes:  # the ten deciles, and no tick beyond them
    ax.set_xticks(range(1, 11))
savefig(fig, "fig5_difficulty_control", STUDY, scale, data=config.dataset)

# %% [markdown]
# **Figure 3.5.** Clean-difficulty control: mean exact $\Delta_i$ of clean and corrupted
# examples per difficulty decile of the noisy run (left, the confirmatory seeds), and where
# the clean run's top-100 $\Delta_i$ fall (right, those and the attribution arm's seeds).

# %% tags=["remove-input"]
by_decile = noisy.groupby(["flipped", "decile"])["mean_delta"].mean()
corrupted_up = int((by_decile[True] > 0).sum()) if True in by_decile.index else 0
clean_down = int((by_decile[False] < 0).sum()) if False in by_decile.index else 0
deciles = noisy["decile"].nunique()
hardest_share = share.iloc[-1] / 0.1 if len(share) else np.nan
top_deciles = share.sort_values(ascending=False).index[:3].tolist()
# the claim's measure: the share of the noisy run's own top-k held by hard clean examples
hard_clean = (noisy[(noisy["decile"] == 10) & ~noisy["flipped"].astype(bool)]
              .groupby("seed")["top_share"].sum()
              .reindex(sorted(noisy["seed"].unique()), fill_value=0.0))
display(Markdown(f"""
Left: in the {config.attribution_corruption:.0%} noise run corrupted examples raise er (mean
$\\Delta$ above zero) in {corrupted_up} of {deciles} difficulty deciles (mean $\\Delta$
{span(by_decile.get(True, pd.Series(dtype=float)), 3)}), while clean ones lower it in
{clean_down} of {deciles}: {"difficulty does not explain the attribution" if corrupted_up
== deciles else "difficulty explains part of the attribution"}. The claim's measure: in the
{config.attribution_corruption:.0%} noise run the clean examples of the hardest decile hold
{pct_span(hard_clean)} of its top {config.top_k} $\\Delta$ over the seeds (the paper calls
their part negligible; the rule's bound is 5%, below the
{pct((1 - config.attribution_corruption) / 10)} a top {config.top_k} drawn at random would
give them). Right: in the clean run, whose top {config.top_k} are all clean, the hardest decile
holds {num(hardest_share, 1)}× its uniform share; the deciles holding the most are
{listing(str(d) for d in top_deciles)}. The rule looks only at the hardest decile, so fairly
hard clean examples that contribute from other deciles are not seen by it. The left panel
shows the confirmatory seeds, the right one those and the attribution arm's
({clean["seed"].nunique()} seeds).
{arm_phrase("The clean run's share beside the claim", "the clean run")}
"""))

# %% [markdown]
# ## 6. Onset vs test degradation, and architectures

# %%
onset = summary[summary["corruption"] >= 0.2][["model", "corruption", "seed", "onset_epoch",
                                                 "peak_epoch", "test_peak_epoch"]]
# per model and corruption rate: seed means of the epochs, and in how many runs onset came first
(onset.assign(onset_first=onset["onset_epoch"] < onset["test_peak_epoch"])
 .groupby(["model", "corruption"])
 .agg(runs=("seed", "size"), onset_epoch=("onset_epoch", "mean"),
      peak_epoch=("peak_epoch", "mean"), test_peak_epoch=("test_peak_epoch", "mean"),
      onset_first_in=("onset_first", "sum"))
 .round(1))

# %%
arch = summary[summary["corruption"] == config.attribution_corruption].merge(
    at.query("signal == 'LOO er attribution (exact)'")[["model", "seed", "auroc",
                                                        "precision_at_100"]], how="left")
arch_signals = signals[(signals["signal"] == "LOO er attribution (exact)")
                       & (signals["corruption"] == config.attribution_corruption)]
arch_table = arch_signals.groupby("model")[["auroc", "precision_at_100", "enrichment"]].mean()
arch_table = arch_table.join(summary[summary["corruption"] == config.attribution_corruption]
                             .groupby("model")[["er_epoch1", "er_peak", "er_last",
                                                "spearman_exact_first",
                                                "test_acc_best"]].mean())
save_table(arch_table.reset_index(), "architectures", STUDY, scale)
arch_table.round(3)

# %% [markdown]
# The tables' onset epoch is the first epoch after the pre-peak minimum where er has risen 10%
# of the way to its peak. Because er climbs from epoch 1 in every run, the `onset` claim does
# not compare that epoch with anything; it asks how far er has risen from epoch 1 to the epoch
# of best test accuracy beyond the clean run's change over the same epochs (same seed). The
# architecture table repeats the attribution for each model at the attribution noise rate.

# %% tags=["remove-input"]
onset_epochs = onset["onset_epoch"].dropna()
others = [m for m in arch_table.index if m != config.model]
other_text = listing(f"the {m} (AUROC {num(arch_table.loc[m, 'auroc'], 2)}, precision@100 "
                     f"{num(arch_table.loc[m, 'precision_at_100'], 2)})" for m in others)
# Onset at epoch 2 at the latest: er rose from the first epoch on.
early = bool(len(onset_epochs)) and onset_epochs.max() <= 2
display(Markdown(f"""
Besides the {config.model}, {other_text or "no other model"} ran at the attribution noise rate
(means over its runs, one on each of the first {min(config.arch_seeds, len(config.seeds))}
seeds); at this scale such a run is
a short run of a narrow network ({config.arch_epochs} epochs), a check rather than a
reproduction of the paper's CNN numbers; the `inflation_architectures` row, which asks every
architecture for the collapse, reads *{verdicts.loc["inflation_architectures", "verdict"]}*.
Onset lands at epoch {span(onset_epochs, 0)} and the
best test epoch at {span(onset["test_peak_epoch"], 0)}; onset comes first in
{int((onset["onset_epoch"] < onset["test_peak_epoch"]).sum())} of {len(onset)} noisy runs.
{"Onset by epoch 2 in every noisy run means er climbs from the first epochs on, so whether "
 "it precedes test degradation depends mostly on when test accuracy peaks: read the onset "
 "claim as weak evidence at this scale." if early else "Onset comes after the first epochs "
 "in some runs, so its lead over test degradation says more than a rise from epoch 1 would."}
"""))

# %% [markdown]
# ## Try this
# Each command reruns this notebook with one parameter changed (runs already computed load
# from the cache). `MEMLIB_FIGURES` sends its figures and tables to a scratch folder, so the
# published ones stay as they are; the executed notebook lands in
# `build/small/03_fisher_rank_inflation.ipynb`.

# %%
fisher_runs = entry_seconds("fisher-run")
mean_epochs = float(runs_main["epochs_trained"].mean())
more_epochs = 40 - (config.epochs_after_fit or 0)
# the first exercise reruns a few seeds only, so that a lesson can afford it: its runs are
# these seeds' runs at every noise rate and on every extra model, and the arm seeds' two
try_seeds, try_arm = config.seeds[:4], config.attribution_seeds[:2]
try_runs = (len(try_seeds) * len(config.corruptions) + 2 * len(try_arm)
            + min(config.arch_seeds, len(try_seeds)) * len(config.arch_models))
per_run = float(np.mean(fisher_runs)) if fisher_runs else 0.0
display(Markdown(rf"""
1. **Another noise rate for the attribution, on {count_word(len(try_seeds))} seeds.** The
   paper reports top-100 enrichment in corrupted examples at every noise rate it tried.
   ```bash
   MEMLIB_FIGURES=/tmp/memlib-try .venv/bin/python -m memlib notebook \
       notebooks/03_fisher_rank_inflation.py --set attribution_corruption=0.2 \
       --set "seeds=[{', '.join(map(str, try_seeds))}]" \
       --set "attribution_seeds=[{', '.join(map(str, try_arm))}]"
   ```
   These are the first {count_word(len(try_seeds))} of this notebook's
   {count_word(len(config.seeds))} seeds and the first {count_word(len(try_arm))} of the
   attribution arm's. The attribution's noise rate is part of every run's cache key, so
   their {try_runs} runs are computed again.
   **Run time:** {run_time(try_runs * per_run)}: {try_runs} runs at the mean cost of this
   notebook's {len(fisher_runs)} runs (measured {cost_of(fisher_runs)}), two at a time.
   <details><summary>Answer</summary>

   Expect the corrupted examples to stay enriched at the top of the attribution, with a
   lower precision@100 than at 40% (fewer corrupted examples to find), and a lower peak er;
   with {count_word(len(try_seeds))} seeds the intervals are wider and some rows read
   *within noise*.
   </details>
2. **Train longer after the fit.** Each run stops a few epochs after it has fitted its
   labels (`epochs_after_fit`); the paper's collapse continues while training goes on.
   ```bash
   MEMLIB_FIGURES=/tmp/memlib-try .venv/bin/python -m memlib notebook \
       notebooks/03_fisher_rank_inflation.py --set epochs_after_fit=40
   ```
   **Run time:** {run_time(sum(fisher_runs) * (mean_epochs + more_epochs) / mean_epochs)}:
   every run, the attribution arm's too, is computed again and trains {more_epochs} epochs
   more (measured: {cost_of([sum(fisher_runs)])} for {len(fisher_runs)} runs at
   {num(mean_epochs, 0)} epochs a run on average), two at a time.
   <details><summary>Answer</summary>

   Expect the epochs up to the fit, and with them the er peak and the attribution at the
   peak, to stay as they are (the same seeds train the same way), and er to keep falling
   after the fit, so the collapse of Figure 3.1 deepens.
   </details>
3. **Weight decay, which delays memorization.**
   ```bash
   MEMLIB_FIGURES=/tmp/memlib-try .venv/bin/python -m memlib notebook \
       notebooks/03_fisher_rank_inflation.py --set weight_decay=5e-4
   ```
   **Run time:** {run_time(sum(fisher_runs) * config.epochs / mean_epochs, at_most=True)}:
   every run is computed again (measured {cost_of([sum(fisher_runs)])} at
   {num(mean_epochs, 0)} epochs a run on average), each up to the {config.epochs}-epoch cap
   if weight decay delays its fit, two runs at a time.
   <details><summary>Answer</summary>

   Expect a later and lower er peak (Figures 3.1 and 3.2) and slower fitting of the
   corrupted labels: within a
   fixed budget the collapse may not show at all (the paper's caveat on regularization).
   </details>
"""))

# %% [markdown]
# ## Claims

# %% tags=["remove-input"]
arm_seeds = seed_words.get("attribution_seeds")
now_seeds = (f"""{seed_words["seeds"]} with the attribution arm's {arm_seeds}"""
             if seed_words["confirmatory"] and config.attribution_seeds
             else f"""{seed_words["registered"]}, the main seeds and the attribution arm's""")
display(Markdown(f"""The rules were rewritten after the pilot (seeds {seed_words["pilots"]},
whose verdicts the claims report keeps beside these) and registered before the confirmatory
seeds were run ({seed_words["earlier_steps"]}; now {now_seeds}, fresh seeds for the rules as
registered now""" + (
    ", whose verdicts these are" if seed_words["confirmatory"] else f"""; this run's verdicts
come from {seed_words["ran"]}""") + "). What changed:"))

# %% [markdown]
# - `onset` measured the first epoch at which er had risen a tenth of the way to its peak;
#   er climbs from epoch 1, so that epoch was 2 in every pilot run and the rule could not
#   fail. It now measures how far er has risen from epoch 1 to the epoch of best test
#   accuracy *beyond the clean run's change over the same epochs* (same seed), averaged over
#   each seed's noisy runs: the claim holds when that inflation is above 0 beyond noise, and
#   fails when test accuracy peaks before er has moved away from the clean run.
# - `not_detector` tested the paper's example range 0.6 ≤ AUROC ≤ 0.8 on both sides; an AUROC
#   of 0.85 would have "failed" without contradicting the paper. The claim is one-sided: a
#   signature (above chance, 0.5) that is clearly short of a detector (below 0.9; section 4
#   sets the cheap loss-based signals beside it), each side beyond noise.
# - The precondition of `enrichment` and `not_detector` accepted any argmax inside training,
#   including curves still rising at the last epochs. It now also needs a decline: the fall
#   from the peak to the last epoch is at least a tenth of the peak (seed mean) and its
#   interval excludes 0.
# - `first_order` is judged on the mean over seeds (it was the minimum in an earlier draft)
#   against the paper's CNN figure 0.96 (it was 0.9); the minimum is shown beside the mean.
#   That figure is the paper's for CNNs, so the row is now judged on the CNN runs (SmallCNN,
#   ResNet18), not on this notebook's MLP; below full scale that round had one SmallCNN run,
#   which has no interval.
# - `difficulty_control` then compared corrupted with clean examples within each difficulty
#   decile of the 40% run (it read the hardest decile's share of the clean run's top
#   contributors; an absolute bound since, below).
# - `first_order` and `difficulty_control` then read the confirmatory seeds and the seeds of
#   an attribution arm (sections 4 and 5): on six seeds their intervals straddled the
#   threshold. Their current versions decide on the confirmatory seeds (`first_order` on
#   the SmallCNN runs of the first `arch_seeds`) and show the arm's values beside.
# - `inflation_collapse` is judged on each seed's curve; the gap of the seed-mean curve is
#   shown beside it.
# - New rows: `attribution_weakens` (AUROC at the er peak minus at the last epoch, after the
#   noise is fitted) and `inflation_architectures` (the collapse gap per architecture, which
#   needs two or more seeds per architecture: the full preset, with CIFAR-100 as the same
#   notebook on `dataset: cifar100`; its verdict at this scale is in the claims table).
# - Rows added after the first confirmatory run, their thresholds taken from the paper's
#   wording, all three at full scale only (here *not run at this scale*):
#   `cifar10n_enrichment` (the enrichment row's bars on each CIFAR-10N label set),
#   `first_order_vit` (each ViT's first-order Spearman below each CNN's, paired by seed) and
#   `first_order_cifar100` (on `dataset: cifar100`: first-order attribution less accurate
#   there than CIFAR-10's 0.96, the paper's direction; it first asked for the opposite).
#
# - Rules changed after the previous confirmatory run was seen (the versions these seeds are
#   judged by), each registered as a new version with the earlier one kept beside it:
#   `difficulty_control` is an absolute bound, the share of the 40% run's top-100 held by
#   clean examples of the hardest decile below 5% (the paper calls their part negligible;
#   the decile contrast it replaces was relative, and the clean run's hardest decile held
#   1.8× its uniform share in an earlier run); `first_order` is judged on the SmallCNN,
#   trained at 40% noise on the first `arch_seeds` confirmatory seeds (it had one run), one
#   value per seed averaged over a seed's CNNs; no row has a δ any more (the paper gives no
#   number for one; `monotone_peak`, `onset`, `attribution_weakens` and `first_order_vit`
#   had one of the study's choosing); every row names its instrument and the smallest effect
#   its n is powered for.
# - New rows, statements of the paper about er's course that had none: `inflation_under_noise`
#   (a noisy run's er rises to its peak beyond the clean run's change over the same epochs) and
#   `peak_at_turn` (er peaks after test accuracy stops improving and before the noisy labels
#   are fitted).
#
# Every interval is a 95% Student-t interval over seeds (it was ± 2 SE, which with three
# seeds is less than half as wide).

# %%
measured = measure(results, config)
table = evaluate(CLAIMS, measured)
write(table, STUDY, scale)
display(Markdown(claims_markdown(table)))

# %% [markdown]
# Each claim that does not hold, or whose precondition failed, is explained below from its
# measured values (and any verdict that hinges on how a rule reads the paper).

# %% tags=["remove-input"]
display(Markdown(explanations(table, {})))
