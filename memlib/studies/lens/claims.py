"""The lens's claims: what each measures from `run`'s results, its rule, and the earlier
version of a claim kept beside the current one."""

from __future__ import annotations

import math

import pandas as pd

from memlib.claims import (
    MIN_REPLICATES,
    Cases,
    Claim,
    Estimate,
    all_of,
    correlations,
    declare,
    earlier_version,
    margin,
    paired,
    powered,
    with_margins,
)
from memlib.studies import fisher, probes, rlp
from memlib.studies.lens.config import Config
from memlib.studies.lens.method import AGREEMENT_SCORES

__all__ = ["FITTED", "DECLINE", "fall_after_peak", "rlp_half_epoch", "er_peak_epoch",
           "breaks_first", "mean_agreement", "measure", "MEMORIZED", "INTERIOR",
           "LAYER_MEMORIZES", "RISES", "DEEPEST_MEMORIZES", "COMPUTED", "OVER_SEEDS",
           "claims_for"]


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


# the smallest effect of interest of each directional rule, fixed before the run that uses
# it; every other rule says why it needs none
_AT_ZERO = ("a rule that zero satisfies ({}): no effect is the rule holding, so no margin "
            "could read it as does not hold; an interval wholly below 0 does")
_MARGINS = {
    "rlp_confidence_flags": {"delta_reason": (
        "memlib's own question, which no paper sizes: no δ (a tenth of the way from chance to "
        "a detector would be the study's number), so no equivalence verdict; an interval "
        "wholly below 0.5 reads does not hold")},
    "fisher_matches_loss": {"delta_reason": "an equivalence rule itself: its bounds, ±0.1 "
                                            "AUROC, are the margin; an interval wholly beyond "
                                            "either reads does not hold"},
    "memorizing_layer_breaks_first": {"delta_reason": _AT_ZERO.format(
        "as fragile as the second least robust other layer is still among the two least "
        "robust")},
    "er_peaks_first": {"delta_reason": _AT_ZERO.format("'no later': a lead of 0 epochs "
                                                       "holds")},
    "measures_agree": {"delta_reason": "a threshold rule (ρ >= 0.3, a moderate correlation): "
                                       "an interval wholly below 0.3 reads does not hold, so "
                                       "no margin is needed"},
}
# what each row reads, and the smallest effect its confirmatory n is powered to decide (in
# its margins' unit), fixed before the run with its reason
_PLANNED = {
    "rlp_confidence_flags": {
        "instrument": "the deepest layer's online RLP heads (study 1's): their mean "
                      "probability of their own random label, per example",
        "smallest_effect": 0.05,
        "smallest_effect_reason": "an AUROC a tenth of the way from chance (0.5) to a perfect "
                                  "detector"},
    "fisher_matches_loss": {
        "instrument": "exact leave-one-out change of the last-layer gradients' effective "
                      "rank (study 3's) against the final loss, per example",
        "smallest_effect": 0.05,
        "smallest_effect_reason": "a difference of AUROC 0.05 inside the rule's ±0.1 bound, "
                                  "half its width"},
    "memorizing_layer_breaks_first": {
        "instrument": "binarizing each layer of the trained network (study 4's probe)",
        "smallest_effect": 2.0,
        "smallest_effect_reason": "2 points of test accuracy, the smallest gap between layers "
                                  "that the 1,000-image curve test set resolves (binomial SE "
                                  "about 1.5 points)"},
    "er_peaks_first": {
        "instrument": "the effective rank of last-layer gradients (study 3's) and the deepest "
                      "online RLP heads (study 1's), over training",
        "smallest_effect": 2.0,
        "smallest_effect_reason": "one measurement interval: both curves are read every 2 "
                                  "epochs"},
    "measures_agree": {
        "instrument": "Spearman ρ between the per-example scores of the four measures",
        "smallest_effect": 0.1,
        "smallest_effect_reason": "ρ 0.1 beyond the rule's threshold of 0.3"},
}


def _dataset_claims(dataset: str) -> list[Claim]:
    return with_margins(declare([
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
              unit="ΔAUROC", headline=lambda v: v["difference"], scope="ours",
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
    ], _DECIDERS, dataset, measure=measure),
        {k: {**_MARGINS[k], **_PLANNED[k]} for k in _MARGINS}, dataset)


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


# Each rule's confirmatory replicates, chosen before the run by pilots/power.py (its table:
# pilots/05_memorization_lens_power_run.csv): the n at which the rule is decided with at least
# 80% chance when its true effect is its stated smallest effect, at the per-replicate spread
# of the previous confirmatory run (a new row: a named stand-in's; a row whose measure
# changed: the spread of the version that run judged). Rules not listed need the registered
# minimum (5). A rule whose n exceeds what the run affords (pilots/power.py's BUDGET) runs on
# that, reads "within noise: needs n ≈ N" and stays outside Holm's family.
CONFIRMATORY_N: dict[str, int] = {
    "fisher_matches_loss_fashion_mnist": 19, "er_peaks_first_fashion_mnist": 7,
    "fisher_matches_loss_mnist": 18
}
POWER_SOURCE = "pilots/power.py"


def claims_for(config: Config) -> list[Claim]:
    """The claims of the datasets the config runs ("mnist" also answers for mnist-5k), each
    with its confirmatory n."""
    keys = dict.fromkeys(probes.claim_dataset(d) for d in config.datasets)
    claims = _with_first_words([claim for key in keys for claim in _dataset_claims(key)])
    return [powered(c, CONFIRMATORY_N.get(c.id, MIN_REPLICATES), POWER_SOURCE) for c in claims]
