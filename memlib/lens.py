"""Four lenses on one model: do the papers' memorization measures see the same thing?

None of the four papers asks it; each measures memorization its own way. Here one model,
study 1's default (its own preset, trained by `memlib.studies.rlp.train_run`, random-label heads
at every probed layer), is watched through all of them at once, with each study module's
public functions:

- study 1 (rlp): each layer's random-label accuracy above a frozen-initialisation head,
  and the deepest head's confidence in each example's own random label;
- study 2 (modarith): the split of the training labels into the clean ones fitted, the
  corrupted ones memorized and the corrupted ones still predicted correctly (the rule
  kept inside), over training, and per example the epoch from which its label stays fitted;
- study 3 (fisher): er, the effective rank of the last layer's per-example gradients,
  over training, and each example's leave-one-out attribution at the er peak;
- study 4 (probes): the accuracy lost when one layer alone is binarized, or its weights
  are shuffled within sign (null model B);
- and three classic per-example scores: the final loss, the area under the margin (AUM)
  and the number of forgetting events.

Per example the scores are compared by Spearman correlation and by how well each finds
the corrupted labels (AUROC); per layer the three layer measures side by side; over
training the curves on one time axis.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from memlib import data as datasets
from memlib import fisher, imagenet, probes
from memlib.claims import (
    Cases,
    Claim,
    Estimate,
    all_of,
    correlations,
    declare,
    earlier_version,
    margin,
    paired,
)
from memlib.config import (
    SEED_MAX,
    AtLeast,
    AtMost,
    ConfigError,
    Distinct,
    NonEmpty,
    NonNegative,
    Positive,
    Rate,
    build,
    check,
    check_fields,
    check_stratified,
    to_dict,
)
from memlib.presets import preset_of
from memlib.runs import TRAINING, computation, compute_missing
from memlib.seed import generator
from memlib.studies import rlp

DATASETS = ("fashion_mnist", "mnist", "cifar10", "cifar100", "digits")  # in memory
# name -> (column of the per-example table, sign): a higher sign * value means "looks
# memorized", i.e. more likely a corrupted label
SCORES = {
    "Fisher LOO (exact)": ("delta_exact", 1),
    "Fisher LOO (first order)": ("delta_first", 1),
    "final loss": ("final_loss", 1),
    "AUM": ("aum", -1),
    "forgetting events": ("forgetting", 1),
    "epoch learned": ("learned_epoch", 1),
    "random-label confidence": ("rlp_confidence", 1),
}
# one score per lens for the agreement claim (the first-order attribution approximates the
# exact one and would count study 3 twice)
AGREEMENT_SCORES = ("Fisher LOO (exact)", "final loss", "AUM", "forgetting events",
                    "epoch learned", "random-label confidence")


@dataclass(frozen=True)
class Config:
    # the scale of study 1's preset (params/<setting>/01_random_label_heads.yaml) that gives
    # every run's data size, model, heads and training: the lens watches that very model
    setting: Literal["smoke", "small", "full"] = "small"
    # changes to that preset, as `key=value` like memlib's --set (e.g. "epochs=20")
    study1_sets: tuple[str, ...] = ()
    # "mnist" is the bundled 5,000-digit subset (mnist-5k) when the full set is not on disk
    datasets: Annotated[tuple[str, ...], NonEmpty, Distinct] = ("fashion_mnist", "mnist")
    noise_rates: Annotated[tuple[float, ...], NonEmpty, Distinct, Rate] = (0.0, 0.2, 0.4)
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = (
        0, 1, 2)
    # training examples scored and forming the gradient scatter (a fixed class-stratified
    # subset); None: every training example
    scatter_samples: Annotated[int | None, AtLeast(10), AtMost(10**7)] = None
    # epochs between the measurements over training (er, the fits, head and test accuracy;
    # and always the last); each example's margin is recorded every epoch
    measure_every: Annotated[int, Positive, AtMost(10**4)] = 2
    exact_loo_max: Annotated[int, NonNegative, AtMost(10**7)] = 20000  # exact LOO up to this size
    null_draws: Annotated[int, Positive, AtMost(10**4)] = 3  # null-model B shuffles per layer
    # training runs computed at once, each in its own process on one CPU thread
    parallel_runs: Annotated[int, Positive, AtMost(256)] = 1

    def __post_init__(self):
        check_fields(self)
        bad = [d for d in self.datasets if d not in DATASETS]
        check(not bad, f"dataset {bad[:1]} is not available to the lens (its images must fit "
                       f"in memory); choose from: {', '.join(DATASETS)}")
        bad = [s for s in self.study1_sets if "=" not in s]
        check(not bad, f"study1_sets expects key=value items, got {bad[:1]}")
        study1 = study1_config(self)  # the preset with these changes: a valid study-1 config
        for name in self.datasets:  # on every dataset the lens runs it on
            check_stratified("scatter_samples", self.scatter_samples, datasets.NUM_CLASSES[name],
                             name)
            try:
                dataclasses.replace(study1, dataset=name)
            except ConfigError as err:
                raise ConfigError(f"study 1's preset on {name}: {err}") from None


@dataclass(frozen=True)
class LensRun:
    """One training run and how it is watched: the cache key of `lens_run`."""

    run: rlp.RunSpec
    scatter_samples: int | None
    measure_every: int
    exact_loo_max: int
    null_draws: int


def study1_config(config: Config) -> rlp.Config:
    """Study 1's config: its preset at `config.setting`, changed by `config.study1_sets`."""
    preset = to_dict(preset_of(rlp.Config, "rlp", config.setting))
    sets = dict(item.split("=", 1) for item in config.study1_sets)
    try:  # the lens runs no long tail: its ratio need not fit the samples (none, unless set)
        return build(rlp.Config, {**preset, "long_tail_ratio": 1.0, **sets})
    except ConfigError as err:
        raise ConfigError(f"study1_sets: {err}") from None


def runs(config: Config) -> list[LensRun]:
    """Every (dataset, noise rate, seed) run, on the resolved dataset names."""
    base = study1_config(config)
    watch = dict(scatter_samples=config.scatter_samples, measure_every=config.measure_every,
                 exact_loo_max=config.exact_loo_max, null_draws=config.null_draws)
    return [LensRun(rlp.spec(base, dataset=datasets.resolve(name), noise=noise, seed=seed),
                    **watch)
            for name in config.datasets for noise in config.noise_rates for seed in config.seeds]


def frozen_spec(s: rlp.RunSpec, study1: rlp.Config) -> rlp.RunSpec:
    """The run whose frozen-initialisation baseline `s` is compared with. The baseline does
    not depend on the label noise (the same initialisation, random labels and head
    training), so every noise rate shares the one at study 1's own noise rate, which study 1
    has computed already for its dataset."""
    return dataclasses.replace(s, noise=study1.noise)


# --- per-example scores from the margins over training ------------------------------------


def aum(margins: torch.Tensor) -> torch.Tensor:
    """Area under the margin: each example's margin (rows: epochs 0..T) averaged over epochs
    1..T, as study 3 computes it (Pleiss et al. 2020)."""
    return margins[1:].double().mean(0)


def forgetting_counts(margins: torch.Tensor) -> torch.Tensor:
    """Forgetting events (Toneva et al. 2019): epochs t >= 2 at which an example predicted
    correctly (margin > 0) at epoch t - 1 is not any more (the untrained network's guesses at
    epoch 0 are not learning). An example never predicted correctly after epoch 0 counts as
    forgotten more often than any other (T + 1), as in the paper."""
    correct = margins[1:] > 0
    events = (correct[:-1] & ~correct[1:]).sum(0).double()
    return torch.where(correct.any(0), events, float(len(margins)))


def learned_epoch(margins: torch.Tensor) -> torch.Tensor:
    """The epoch from which each example's label stays predicted to the end of training
    (T + 1 if it is not predicted at the end): study 2's learning order, per example."""
    correct = margins > 0
    epochs = len(margins)
    wrong = torch.where(~correct, torch.arange(epochs)[:, None], -1)  # epochs it was wrong
    return (wrong.amax(0) + 1).double()


# --- the run: study 1's training, watched ---------------------------------------------------


def scatter_positions(s: rlp.RunSpec, clean: torch.Tensor, count: int | None) -> torch.Tensor:
    """Training positions scored and forming the gradient scatter: a class-stratified subset
    fixed by the data seed (the same examples at every noise rate and seed)."""
    if count is None or count >= len(clean):
        return torch.arange(len(clean))
    classes = len(clean.unique())
    check(count >= classes, f"scatter_samples={count} is fewer than the {classes} classes; the "
                            "scored examples are a class-stratified subset")
    return datasets.stratified_subset(clean.cpu(), count=count, seed=s.data_seed + 4)


def observer(r: LensRun):
    """`rlp.train_run`'s observe hook. Every epoch, each scatter example's margin; every
    `measure_every` epochs (and the last) er, keeping the features and logits of its peak,
    the fits of the clean and the corrupted labels, the deepest head's random-label accuracy
    and test accuracy. Everything is evaluated in eval mode without random draws: the
    training is study 1's, unchanged."""
    s = r.run

    def observe(model: nn.Module, heads: rlp.RLPHeads, d: dict, memo: dict):
        x, y = d["train"]
        pick = scatter_positions(s, d["clean_y"], r.scatter_samples).to(y.device)
        xs, ys = x[pick], y[pick].cpu()
        flipped, true = (y != d["clean_y"])[pick].cpu(), d["clean_y"][pick].cpu()
        random = d["random"][pick]
        deepest = heads.layers[-1]
        memo.update(margins=[], rows=[], best=-math.inf, pick=pick.cpu())

        def track(state) -> None:
            h, z = fisher.last_layer(model, s.model, xs)
            memo["margins"].append(fisher.margins(z, ys))
            last = state.stop or state.epoch == s.epochs  # the fit's stop, or the maximum
            if state.epoch % r.measure_every and not last:
                return
            predicted = z.argmax(1)
            feats = rlp.pooled_features(model, (xs, y[pick]), [deepest])[deepest]
            with torch.no_grad():
                head = heads.head(deepest)(feats)
            row = {"epoch": state.epoch,
                   "clean_fit": _mean(predicted[~flipped] == ys[~flipped]),
                   "noisy_fit": _mean(predicted[flipped] == ys[flipped]),
                   "noisy_true": _mean(predicted[flipped] == true[flipped]),
                   "rlp_deepest": _mean(head.argmax(1) == random),
                   "test_acc": rlp.measure(model, None, d["test"])["acc"],
                   "er": fisher.scatter_effective_rank(h, z, ys)}
            if state.epoch >= 1 and row["er"] > memo["best"]:  # epoch 0: inflated by the init
                memo.update(best=row["er"], peak_epoch=state.epoch, h=h, z=z)
            memo["rows"].append(row)
            if last:
                memo.update(final_logits=z, rlp_confidence=head.softmax(1)
                            .gather(1, random[:, None])[:, 0].cpu())

        return [track]

    return observe


def _mean(hits: torch.Tensor) -> float:
    return hits.float().mean().item() if hits.numel() else math.nan


def example_scores(memo: dict, labels: torch.Tensor, flipped: torch.Tensor,
                   exact: bool) -> pd.DataFrame:
    """Every scatter example's scores (columns of SCORES) from the observer's memo."""
    m = torch.stack(memo["margins"])
    lam, z = fisher.decompose(memo["h"], memo["z"], labels)
    return pd.DataFrame({
        "position": memo["pick"].numpy(), "flipped": flipped.numpy(),
        "delta_exact": fisher.loo_exact(lam, z, device="auto").numpy() if exact else math.nan,
        "delta_first": fisher.loo_first_order(lam, z).numpy(),
        "final_loss": F.cross_entropy(memo["final_logits"].double(), labels,
                                      reduction="none").numpy(),
        "aum": aum(m).numpy(), "forgetting": forgetting_counts(m).numpy(),
        "learned_epoch": learned_epoch(m).numpy(),
        "rlp_confidence": memo["rlp_confidence"].double().numpy()})


def layer_weights(model: nn.Module, layers: Sequence[str]) -> dict[str, list[str]]:
    """The weight tensors (2-D and more; no biases or norms) that compute each probed layer:
    those of the modules after the previous probed layer, up to and inside this one. The
    model's own parameters (a ViT's class token and position embedding) belong to none."""
    order = {name: i for i, (name, _) in enumerate(model.named_modules())}
    ends = [max(order[n] for n in order if n == layer or n.startswith(layer + "."))
            for layer in layers]
    out: dict[str, list[str]] = {layer: [] for layer in layers}
    for name, p in model.named_parameters():
        owner = order[name.rpartition(".")[0]]
        layer = next((lay for lay, end in zip(layers, ends, strict=True) if owner <= end), None)
        if layer is not None and p.ndim >= 2 and owner > 0:
            out[layer].append(name)
    return out


def layer_probes(model: nn.Module, layers: Sequence[str], x: torch.Tensor, y: torch.Tensor,
                 draws: int, seed: int) -> pd.DataFrame:
    """Test accuracy (%) with one probed layer's weights binarized (the paper's sign(W), and
    alpha sign(W)) or shuffled within sign (null model B, median over `draws`), per layer
    (NaN for a layer without weights of its own, e.g. a pooling layer)."""
    gen = generator(seed)  # a CPU generator: probe CPU copies, evaluate on the model's device
    params = {k: v.cpu() for k, v in probes.detached_params(model).items()}
    weights = layer_weights(model, layers)
    variants, keys = [params], [("-", "float")]
    for layer in (lay for lay in layers if weights[lay]):
        names = weights[layer]
        variants += [probes.apply_probe(params, names, probes.binarize),
                     probes.apply_probe(params, names, lambda w: probes.binarize(w, True))]
        keys += [(layer, "sign"), (layer, "scaled_sign")]
        for _ in range(draws):
            variants.append(probes.apply_probe(params, names,
                                               lambda w: probes.null_model(w, "B", gen)))
            keys.append((layer, "null_b"))
    device = next(model.parameters()).device
    acc = probes.accuracy_of_variants(model, [{k: v.to(device) for k, v in p.items()}
                                              for p in variants], x, y).tolist()
    frame = pd.DataFrame(keys, columns=["layer", "probe"]).assign(acc=acc)
    table = frame[frame["layer"] != "-"].groupby(["layer", "probe"], sort=False)["acc"] \
        .median().unstack()
    table = table.reindex(list(layers)).reset_index()
    return table.assign(depth=range(1, len(layers) + 1), float=acc[0])


def lens_run(r: LensRun) -> dict:
    """Study 1's training run `r.run`, watched (see `observer`); its per-example, per-layer
    and per-epoch tables."""
    result = rlp.train_run(r.run, observe=observer(r))
    memo, model, d = result["memo"], result["model"], result["data"]
    pick = memo["pick"]
    labels = d["y"].cpu()[pick]
    flipped = (d["y"] != d["clean_y"]).cpu()[pick]
    examples = example_scores(memo, labels, flipped, len(pick) <= r.exact_loo_max)
    x_test, y_test = d["test"]
    layers = layer_probes(model, result["layers"], x_test, y_test, r.null_draws, r.run.seed)
    last = result["history"].iloc[-1]
    layers["rlp_acc"] = [last[f"rlp_{n}"] for n in result["layers"]]
    return {"history": result["history"], "curves": pd.DataFrame(memo["rows"]),
            "examples": examples, "layers": layers, "peak_epoch": memo["peak_epoch"],
            "noisy_fit": result["noisy_fit"], "chance": 1 / result["n_random"],
            "fit_epoch": result["fit_epoch"], "epochs_trained": result["epochs_trained"]}


@computation("lens_run", 1, uses=(*TRAINING, imagenet))
def cached_lens(r: LensRun) -> dict:
    return lens_run(r)


# --- the experiment -------------------------------------------------------------------------


def oriented(examples: pd.DataFrame) -> pd.DataFrame:
    """The per-example scores, each signed so that higher means "looks memorized"."""
    return pd.DataFrame({name: sign * examples[col] for name, (col, sign) in SCORES.items()})


def agreement(examples: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Spearman correlation of every pair of oriented scores within each group of `by`
    (one run), in long form: by..., a, b, rho."""
    rows = []
    for key, group in examples.groupby(list(by)):
        scores = oriented(group).dropna(axis=1, how="all")
        rho = scores.corr(method="spearman")
        rows += [{**dict(zip(by, key, strict=True)), "a": a, "b": b, "rho": rho.loc[a, b]}
                 for a in rho.index for b in rho.columns]
    return pd.DataFrame(rows)


def corruption_auroc(examples: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Each oriented score's AUROC for "this label was corrupted" (nan without corruption)."""
    rows = []
    for key, group in examples.groupby(list(by)):
        flipped = group["flipped"].to_numpy(dtype=bool)
        for name, score in oriented(group).items():
            auroc = (math.nan if score.isna().all()
                     else fisher.ranking_metrics(score.to_numpy(), flipped)["auroc"])
            rows.append({**dict(zip(by, key, strict=True)), "score": name, "auroc": auroc})
    return pd.DataFrame(rows)


def planned_runs(config: Config) -> list[tuple]:
    """(cached computation, argument) of every cached result of `run`: the watched runs,
    then the frozen-initialisation baselines they are compared with (study 1's)."""
    planned, study1 = runs(config), study1_config(config)
    frozen = dict.fromkeys((rlp.cached_frozen, frozen_spec(r.run, study1)) for r in planned)
    return [(cached_lens, r) for r in planned] + list(frozen)


def run(config: Config) -> dict:
    """Every (dataset, noise, seed) run, cached; `parallel_runs` computed at once. Tidy
    tables with dataset, noise and seed columns."""
    planned, study1 = runs(config), study1_config(config)
    compute_missing(planned_runs(config), config.parallel_runs, "lens runs")
    examples, layers, curves, summary = [], [], [], []
    for r in planned:
        s = r.run
        label = {"dataset": s.dataset, "noise": s.noise, "seed": s.seed}
        result = cached_lens(r)
        frozen_history = rlp.cached_frozen(frozen_spec(s, study1))["history"].set_index("epoch")
        # the heads on frozen features after as many epochs as the run trained
        baseline = frozen_history.loc[result["epochs_trained"]]
        examples.append(result["examples"].assign(**label))
        layer = result["layers"].assign(**label)
        layer["frozen_acc"] = [baseline[f"rlp_{n}"] for n in layer["layer"]]
        layer["excess"] = 100 * (layer["rlp_acc"] - layer["frozen_acc"])  # points
        layers.append(layer)
        curve = result["curves"].assign(**label)
        # the deepest head on frozen features at each epoch: what it learns by itself
        deepest = f"rlp_{result['layers']['layer'].iloc[-1]}"
        curve["frozen_deepest"] = frozen_history[deepest].reindex(curve["epoch"]).to_numpy()
        curves.append(curve)
        last = result["history"].iloc[-1]
        summary.append({**label, "train_acc": last["train_acc"], "test_acc": last["test_acc"],
                        "noisy_fit": result["noisy_fit"], "peak_epoch": result["peak_epoch"],
                        "epochs": result["epochs_trained"], "fit_epoch": result["fit_epoch"],
                        "chance": result["chance"]})
    examples = pd.concat(examples, ignore_index=True)
    by = ["dataset", "noise", "seed"]
    layers = pd.concat(layers, ignore_index=True)
    layers["drop_sign"] = layers["float"] - layers["sign"]
    layers["drop_scaled_sign"] = layers["float"] - layers["scaled_sign"]
    layers["gap_null_b"] = layers["float"] - layers["null_b"]
    return {"runs": pd.DataFrame(summary), "examples": examples, "layers": layers,
            "curves": pd.concat(curves, ignore_index=True),
            "agreement": agreement(examples, by), "auroc": corruption_auroc(examples, by),
            "specs": planned}


# --- claims ---------------------------------------------------------------------------------
# Our own questions, not the papers', with rules in the papers' form. Each is asked of every
# dataset at the highest noise rate (the setting of study 1) over seeds, with the 95% t
# interval over seeds; the verdict reports what the data say, whichever way it falls.

FITTED = fisher.FITTED  # share of the corrupted labels a noisy run must fit by its end
DECLINE = 0.1  # fall of er from its peak to the last epoch (share of the peak): a real peak


def _at(frame: pd.DataFrame, dataset: str, noise: float) -> pd.DataFrame:
    return frame[(frame["dataset"] == dataset) & (frame["noise"] == noise)]


def _auroc_by_seed(results: dict, dataset: str, noise: float, score: str) -> list[float]:
    rows = _at(results["auroc"], dataset, noise)
    return rows[rows["score"] == score].sort_values("seed")["auroc"].tolist()


def _interior(runs: pd.DataFrame) -> bool:
    return bool(((runs["peak_epoch"] > 1) & (runs["peak_epoch"] < runs["epochs"])).all())


def fall_after_peak(curve: pd.DataFrame) -> float:
    """How far er falls from its peak (epochs >= 1) to its last measurement, as a share of
    the peak: 0 for a curve still rising at the end."""
    er = curve[(curve["epoch"] >= 1) & curve["er"].notna()].sort_values("epoch")["er"]
    return float((er.max() - er.iloc[-1]) / er.max())


def rlp_half_epoch(curve: pd.DataFrame) -> int | None:
    """First epoch at which the deepest head's excess over the same head on frozen features
    (same epoch) reaches half its final value (study 1's `onset_epoch`, as its early_rise
    measures it); None without an excess."""
    curve = curve.sort_values("epoch")
    excess = (curve["rlp_deepest"] - curve["frozen_deepest"]).tolist()
    return rlp.onset_epoch(excess, 0.0, epochs=curve["epoch"].tolist())


def er_peak_epoch(curve: pd.DataFrame) -> int:
    """The epoch (>= 1) of the highest er measured."""
    er = curve[(curve["epoch"] >= 1) & curve["er"].notna()]
    return int(er.loc[er["er"].idxmax(), "epoch"])


def breaks_first(layers: pd.DataFrame) -> dict | None:
    """The layer with the largest mean random-label excess, and how much more accuracy its
    binarization costs than that of the second least robust of the other layers (paired by
    seed; >= 0: it is among the two least robust)."""
    excess = layers.pivot(index="seed", columns="layer", values="excess")
    drop = layers.pivot(index="seed", columns="layer", values="drop_sign")
    if excess.shape[1] < 3:
        return None
    top = excess.mean().idxmax()
    rival = drop.drop(columns=top).mean().sort_values(ascending=False).index[1]
    return {"layer": top, "excess": Estimate.of(excess[top]), "rival": rival,
            "margin": paired(drop[top].tolist(), drop[rival].tolist())}


def mean_agreement(results: dict, dataset: str, noise: float) -> Estimate | None:
    """Per seed, the mean Spearman correlation over the pairs of AGREEMENT_SCORES; their
    mean over seeds with a Fisher-z interval (inside [-1, 1])."""
    rho = _at(results["agreement"], dataset, noise)
    rho = rho[rho["a"].isin(AGREEMENT_SCORES) & rho["b"].isin(AGREEMENT_SCORES)
              & (rho["a"] < rho["b"])]
    if rho.empty:
        return None
    return correlations(rho.groupby("seed")["rho"].mean())


def measure(results: dict) -> dict:
    """The value each claim's rule sees, per dataset (None where it cannot be measured)."""
    runs, measured = results["runs"], {}
    noise = float(runs["noise"].max())
    for dataset in dict.fromkeys(runs["dataset"]):
        key = probes.claim_dataset(dataset)
        if noise == 0:  # nothing is corrupted: none of the questions can be asked
            continue
        at = _at(runs, dataset, noise)
        fit = {"data": dataset, "noise": noise, "noisy_fit": float(at["noisy_fit"].min()),
               **rlp.fit_record(at)}
        curves = _at(results["curves"], dataset, noise)
        peaks = {"interior_peaks": _interior(at), "fall_after_peak": Estimate.of(
            fall_after_peak(c) for _, c in curves.groupby("seed"))}
        exact = _auroc_by_seed(results, dataset, noise, "Fisher LOO (exact)")
        loss = _auroc_by_seed(results, dataset, noise, "final loss")
        measured[f"fisher_matches_loss_{key}"] = (
            {**fit, **peaks, "difference": paired(exact, loss)}
            if not any(map(math.isnan, exact)) else None)
        broken = breaks_first(_at(results["layers"], dataset, noise))
        measured[f"memorizing_layer_breaks_first_{key}"] = broken and {**fit, **broken}
        halves = {seed: rlp_half_epoch(c) for seed, c in curves.groupby("seed")}
        er_peaks = {seed: er_peak_epoch(c) for seed, c in curves.groupby("seed")}
        rises = all(h is not None for h in halves.values())
        deepest = _at(results["layers"], dataset, noise)
        deepest = deepest[deepest["layer"] == deepest["layer"].iloc[-1]].sort_values("seed")
        measured[f"er_peaks_first_{key}"] = {
            **fit, **peaks, "excess": Estimate.of(deepest["excess"]), "rlp_rises": rises,
            "lead": Estimate.of([halves[s] - er_peaks[s] for s in halves] if rises else [])}
        measured[f"rlp_confidence_flags_{key}"] = {
            **fit, "auroc": Estimate.of(_auroc_by_seed(results, dataset, noise,
                                                       "random-label confidence"))}
        measured[f"measures_agree_{key}"] = {**fit, "rho": mean_agreement(results, dataset,
                                                                          noise)}
    return measured


MEMORIZED = (f"the corrupted labels are memorized (>= {FITTED:.0%} of them fitted at the end, "
             "every seed)", lambda v: v["noisy_fit"] >= FITTED)
INTERIOR = (f"er peaks inside training and then declines: every run peaks after epoch 1 and "
            f"before the last, and er falls from the peak to the last epoch by at least "
            f"{DECLINE:g} of the peak (mean over seeds) with a 95% t interval that excludes 0",
            lambda v: v["interior_peaks"] and v["fall_after_peak"].mean >= DECLINE
            and v["fall_after_peak"].beyond_noise)
LAYER_MEMORIZES = ("that layer memorizes (RLP excess over the frozen baseline > 0 beyond "
                   "noise)", lambda v: v["excess"].mean > 0 and v["excess"].beyond_noise)
RISES = ("the deepest head rises above its frozen-initialisation curve in every run",
         lambda v: v["rlp_rises"])
DEEPEST_MEMORIZES = ("the deepest layer memorizes (RLP excess over the frozen baseline > 0 "
                     "beyond noise)", LAYER_MEMORIZES[1])
COMPUTED = ("every score was computed", lambda v: v["rho"] is not None)
OVER_SEEDS = ", per seed, 95% t interval over seeds"


def _e(mean: float, se: float = 0.01, n: int = 5) -> Estimate:
    return Estimate(mean, se, n)


# synthetic measured values for the rules' cases
_FIT = {"data": "fashion_mnist", "noise": 0.4, "noisy_fit": 1.0}
_UNFIT = {**_FIT, "noisy_fit": 0.5}
_PEAKED = {"interior_peaks": True, "fall_after_peak": _e(0.4)}
_STILL_RISING = {"interior_peaks": True, "fall_after_peak": _e(0.03)}
_DEEP = {"excess": _e(7.0), "rlp_rises": True}


# what decides each claim besides its rule: the functions that compute its value and the
# preset values they read (both in the claim's fingerprint)
_PEAK = (fall_after_peak, er_peak_epoch)
_DECIDERS = {
    "fisher_matches_loss": ((fall_after_peak, _auroc_by_seed), ("noise_rates",
                                                               "measure_every")),
    "memorizing_layer_breaks_first": ((breaks_first,), ("noise_rates",)),
    "er_peaks_first": ((rlp_half_epoch, rlp.onset_epoch, *_PEAK), ("noise_rates",
                                                                   "measure_every")),
    "rlp_confidence_flags": ((_auroc_by_seed,), ("noise_rates",)),
    "measures_agree": ((mean_agreement,), ("noise_rates",)),
}


def _dataset_claims(dataset: str) -> list[Claim]:
    return declare([
        Claim(f"fisher_matches_loss_{dataset}",
              "The Fisher attribution finds corrupted labels about as well as the final loss.",
              "ours (no paper compares them)",
              "AUROC for the flip mask of the exact LOO er attribution at the er peak minus "
              "that of the final loss, paired by seed, 95% t interval over seeds",
              "|difference| <= 0.1 AUROC (a fifth of the way from chance to a perfect "
              "detector), decided once the interval lies inside ±0.1 or one bound is crossed "
              "beyond it",
              **all_of(lambda v: [margin(v["difference"], -0.1),
                                  margin(v["difference"], 0.1, at_least=False)]),
              preconditions=(MEMORIZED, INTERIOR),
              cases=Cases(holds={**_FIT, **_PEAKED, "difference": _e(0.02)},
                          fails={**_FIT, **_PEAKED, "difference": _e(0.2)},
                          preconditions={MEMORIZED[0]: {**_UNFIT, **_PEAKED,
                                                        "difference": _e(0.02)},
                                         INTERIOR[0]: {**_FIT, **_STILL_RISING,
                                                       "difference": _e(0.02)}}),
              unit="AUROC", headline=lambda v: v["difference"], scope="ours",
              caveat="positive: the attribution finds corrupted labels better than the loss",
              where="fig1_example_agreement"),
        Claim(f"memorizing_layer_breaks_first_{dataset}",
              "The layer with the largest random-label excess is among the two least robust "
              "to binarization.", "ours",
              "accuracy lost (points) when the layer of largest mean RLP excess alone is "
              "binarized (sign W), minus that of the second least robust other layer (by mean "
              "over seeds), paired by seed, 95% t interval over seeds",
              ">= 0 points (0: exactly as fragile as the second least robust other layer, the "
              "edge of \"among the two least robust\")",
              **all_of(lambda v: [margin(v["margin"], 0)]),
              preconditions=(MEMORIZED, LAYER_MEMORIZES),
              cases=Cases(holds={**_FIT, "layer": "act6", "excess": _e(7.0), "rival": "act1",
                                 "margin": _e(3.0)},
                          fails={**_FIT, "layer": "act6", "excess": _e(7.0), "rival": "act1",
                                 "margin": _e(-3.0)},
                          preconditions={
                              MEMORIZED[0]: {**_UNFIT, "layer": "act6", "excess": _e(7.0),
                                             "rival": "act1", "margin": _e(3.0)},
                              LAYER_MEMORIZES[0]: {**_FIT, "layer": "act6",
                                                   "excess": _e(0.5, 1.0), "rival": "act1",
                                                   "margin": _e(3.0)}}),
              unit="points", headline=lambda v: v["margin"], scope="ours",
              caveat="negative: the memorizing layer is more robust than its rival",
              where="fig2_layer_agreement"),
        Claim(f"er_peaks_first_{dataset}",
              "er peaks no later than the deepest head's random-label excess over its "
              "frozen-initialisation curve reaches half its final value.", "ours",
              "epoch at which the deepest RLP head's excess over the same head on frozen "
              "features (same epoch) reaches half its final value, minus the er peak epoch"
              + OVER_SEEDS,
              ">= 0 epochs (\"no later\")", **all_of(lambda v: [margin(v["lead"], 0)]),
              preconditions=(MEMORIZED, DEEPEST_MEMORIZES, INTERIOR, RISES),
              cases=Cases(holds={**_FIT, **_PEAKED, **_DEEP, "lead": _e(80.0, 3.0)},
                          fails={**_FIT, **_PEAKED, **_DEEP, "lead": _e(-20.0, 3.0)},
                          preconditions={
                              MEMORIZED[0]: {**_UNFIT, **_PEAKED, **_DEEP, "lead": _e(80.0)},
                              DEEPEST_MEMORIZES[0]: {**_FIT, **_PEAKED, **_DEEP,
                                                     "excess": _e(0.5, 1.0),
                                                     "lead": _e(80.0)},
                              INTERIOR[0]: {**_FIT, **_STILL_RISING, **_DEEP,
                                            "lead": _e(80.0)},
                              RISES[0]: {**_FIT, **_PEAKED, **_DEEP, "rlp_rises": False,
                                         "lead": Estimate.of([])}}),
              unit="epochs", headline=lambda v: v["lead"], scope="ours",
              caveat="er is measured every other epoch at the small scale",
              where="fig3_over_training"),
        Claim(f"rlp_confidence_flags_{dataset}",
              "The deepest random-label head is more confident on examples whose label was "
              "corrupted.", "ours",
              "AUROC for the flip mask of the head's final probability of each example's own "
              "random label" + OVER_SEEDS,
              "> 0.5 AUROC (chance: any signal at all)",
              **all_of(lambda v: [margin(v["auroc"], 0.5)]),
              preconditions=(MEMORIZED,),
              cases=Cases(holds={**_FIT, "auroc": _e(0.6)}, fails={**_FIT, "auroc": _e(0.4)},
                          preconditions={MEMORIZED[0]: {**_UNFIT, "auroc": _e(0.6)}}),
              unit="AUROC", headline=lambda v: v["auroc"], scope="ours",
              where="fig1_example_agreement"),
        Claim(f"measures_agree_{dataset}",
              "The per-example measures see the same examples as memorized.", "ours",
              "mean Spearman correlation over the 15 pairs of six oriented scores (exact LOO, "
              "final loss, AUM, forgetting events, epoch learned, random-label confidence)"
              + OVER_SEEDS,
              ">= 0.3 (a moderate correlation by the usual convention: below it two rankings "
              "share little of their order)", **all_of(lambda v: [margin(v["rho"], 0.3)]),
              preconditions=(MEMORIZED, COMPUTED),
              cases=Cases(holds={**_FIT, "rho": _e(0.5)}, fails={**_FIT, "rho": _e(0.1)},
                          preconditions={MEMORIZED[0]: {**_UNFIT, "rho": _e(0.5)},
                                         COMPUTED[0]: {**_FIT, "rho": None}}),
              unit="Spearman ρ", headline=lambda v: v["rho"], scope="ours",
              caveat="loss and AUM are nearly one ranking; the mean counts them as two",
              where="fig1_example_agreement"),
    ], _DECIDERS, dataset)


_ABOVE_CHANCE = "the deepest head rises above chance in every run"


def _with_first_words(claims: list[Claim]) -> list[Claim]:
    """er_peaks_first's first registered version timed the deepest head against chance, not
    against its frozen-initialisation curve, without study 1's memorization precondition."""
    first = dict(
        statement="er peaks no later than the deepest head's random-label accuracy reaches "
                  "half its final excess over chance.",
        measure="epoch at which the deepest RLP head reaches half its final excess over chance "
                "minus the er peak epoch" + OVER_SEEDS,
        preconditions=(MEMORIZED, INTERIOR, (_ABOVE_CHANCE, RISES[1])),
        cases=Cases(holds={**_FIT, **_PEAKED, **_DEEP, "lead": _e(80.0, 3.0)},
                    fails={**_FIT, **_PEAKED, **_DEEP, "lead": _e(-20.0, 3.0)},
                    preconditions={
                        MEMORIZED[0]: {**_UNFIT, **_PEAKED, **_DEEP, "lead": _e(80.0)},
                        INTERIOR[0]: {**_FIT, **_STILL_RISING, **_DEEP, "lead": _e(80.0)},
                        _ABOVE_CHANCE: {**_FIT, **_PEAKED, **_DEEP, "rlp_rises": False,
                                        "lead": Estimate.of([])}}))
    return [earlier_version(c, **first) if c.id.startswith("er_peaks_first_") else c
            for c in claims]


def claims(config: Config) -> list[Claim]:
    """The claims of the datasets the config runs ("mnist" also answers for mnist-5k)."""
    keys = dict.fromkeys(probes.claim_dataset(datasets.resolve(d)) for d in config.datasets)
    return _with_first_words([claim for key in keys for claim in _dataset_claims(key)])
