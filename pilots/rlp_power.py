"""Power analysis of study 1's rules from the spread its pilots measured: `python
pilots/rlp_power.py` (seconds) reads pilots/01_random_label_heads_probes.csv (the probe pilot,
pilot seeds 0-2, clean labels) and, for the rows the pilot has no arm for, the per-seed tables
of the earlier confirmatory run in figures/01_random_label_heads/ (40% label noise, one
concurrent head per layer: an upper bound on the spread of the averaged probes), and writes

- pilots/01_random_label_heads_spread.csv: each row's per-seed SD read with one probe and with
  the mean of K, and test accuracy's SD over the 10,000-image test split and a 1,000-image
  subset of it;
- pilots/01_random_label_heads_power.csv: per rule, the deciding quantity's pilot mean and
  per-seed SD, its threshold, its equivalence margin δ (with the reason), the seeds giving
  >= 80% power to clear the threshold and to land inside ±δ, the n to register, and whether
  the small run can afford it.

The decision tests are the rules' own: a 95% two-sided Student-t interval clearing the
threshold (one-sided α = 0.025), and two one-sided tests at α = 0.05 (the 90% interval inside
±δ) for "no effect as large as δ". Power is that of the noncentral t at the pilot's mean and
SD taken as true. With three pilot seeds an SD is uncertain by a factor of about two either
way: the n are planning numbers, not guarantees.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import nct
from scipy.stats import t as student

HERE = Path(__file__).parent
PILOT = HERE / "01_random_label_heads_probes.csv"
EARLIER = HERE.parent / "figures" / "01_random_label_heads"
SPREAD = HERE / "01_random_label_heads_spread.csv"
POWER = HERE / "01_random_label_heads_power.csv"
VARIANT = "gap"  # the probes' input the pilot chose (pilots/rlp_probe_pilot.md)
POWER_TARGET = 0.80
N_MAX = 200  # beyond this a rule reads "not run at this scale" at any budget
# the seeds the small run affords within notebook 01's 15 minutes on 2 cores at the pilot's
# timings (pilots/rlp_probe_pilot.md gives the sum)
N_BUDGET = 5
LAYERS = ("block1", "block2", "block3")


def per_seed(frame: pd.DataFrame, arm: str, quantity: str, probe: str | None = None,
             variant: str = VARIANT) -> pd.Series:
    """A quantity per seed: the mean over the K probes (probe None), or probe `probe`'s."""
    rows = frame[(frame["arm"] == arm) & (frame["variant"] == variant)
                 & (frame["quantity"] == quantity)]
    if probe is not None:
        rows = rows[rows["probe"].astype(str) == str(probe)]
    return rows.groupby("seed")["value"].mean()


def excess(frame: pd.DataFrame, arm: str, layer: str, probe: str | None = None) -> pd.Series:
    """Trained minus frozen-initialisation probe accuracy, points, per seed."""
    return 100 * (per_seed(frame, arm, f"trained_{layer}", probe)
                  - per_seed(frame, arm, f"frozen_{layer}", probe))


def onset_lead(frame: pd.DataFrame) -> pd.Series:
    """Per seed of the clean arm: divergence epoch (train − test > 5 points) minus the onset
    of block3's excess (the rule's `excess_onset`), epochs."""
    from memlib.studies.rlp.claims import excess_onset, gap_epoch

    clean = frame[(frame["arm"] == "clean")]
    out = {}
    for seed, d in clean.groupby("seed"):
        curve = []
        frozen = d[(d["variant"] == VARIANT) & (d["quantity"] == "frozen_block3")]
        frozen = frozen.set_index(frozen["probe"].astype(int))["value"]
        trained = d[(d["variant"] == VARIANT) & d["quantity"].str.startswith("trained_block3")]
        for _, row in trained.iterrows():
            name = row["quantity"]
            epoch = int(name.split("@")[1]) if "@" in name else int(
                d[d["quantity"].str.startswith("train_acc@")]["quantity"]
                .str.split("@").str[1].astype(int).max())
            curve.append({"epoch": epoch, "probe": int(row["probe"]),
                          "excess": row["value"] - frozen[int(row["probe"])]})
        onset = excess_onset(pd.DataFrame(curve))
        acc = d[d["quantity"].str.contains("_acc@")]
        epochs = sorted({int(q.split("@")[1]) for q in acc["quantity"]})
        get = acc.set_index("quantity")["value"]
        gap = gap_epoch([get[f"train_acc@{e}"] for e in epochs],
                        [get[f"test_acc@{e}"] for e in epochs], epochs=epochs)
        out[seed] = math.nan if onset is None or gap is None else gap - onset
    return pd.Series(out)


def earlier_drops() -> dict[str, np.ndarray]:
    """Per-seed values of the rows the probe pilot has no arm for, from the earlier
    confirmatory run's tables (points)."""
    reg = pd.read_csv(EARLIER / "regularizers.csv")
    none = reg[reg["regularizer"] == "none"].set_index("seed")["rlp_block3"]
    out = {}
    for kind in ("dropout", "weight_decay", "label_smoothing"):
        rows = reg[reg["regularizer"] == kind]
        strongest = rows[rows["strength"] == rows["strength"].max()].set_index("seed")
        out[f"regularizers:{kind}"] = (100 * (none - strongest["rlp_block3"])).to_numpy()
    noise = pd.read_csv(EARLIER / "noise.csv")
    top = noise[noise["noise"] == noise["noise"].max()]
    at = {lam: d.set_index("seed")["test_acc"] for lam, d in top.groupby("lam")}
    best = max((lam for lam in at if lam > 0), key=lambda lam: at[lam].mean())
    out["noise"] = (100 * (at[best] - at[0.0])).to_numpy()
    sweep = pd.read_csv(EARLIER / "lambda_sweep.csv")
    every = sweep[sweep["regularize"] == "all"]
    base = sweep[(sweep["regularize"] == "last") & (sweep["lam"] == 0)].set_index("seed")
    judged = every[every["lam"] > 0]
    judged = judged[judged["lam"] == judged["lam"].max()].set_index("seed")
    out["all_layers_test"] = (100 * (judged["test_acc"] - base["test_acc"])).to_numpy()
    return out


def memorizes(frame: pd.DataFrame, arm: str = "clean") -> tuple[bool, str]:
    """The regularizer rows' precondition in the pilot: the deepest layer's excess > 0 beyond
    its 95% t interval over seeds; with its numbers."""
    v = excess(frame, arm, LAYERS[-1])
    half = student.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return v.mean() - half > 0, f"deepest layer's excess {v.mean():.1f} ± {half:.1f} points"


@dataclass(frozen=True)
class Rule:
    id: str
    quantity: str  # what the values are
    values: np.ndarray  # per seed
    source: str
    threshold: float
    greater: bool  # the rule holds when the quantity exceeds the threshold
    delta: float  # the equivalence margin: "no effect as large as δ"
    delta_reason: str
    precondition: tuple[bool, str] = (True, "")  # whether it held in the pilot, and why


def power_clear(mean: float, sd: float, threshold: float, greater: bool, n: int) -> float:
    """Power of the two-sided 95% t interval to exclude the threshold on the rule's side."""
    if n < 2 or sd <= 0:
        return math.nan
    shift = (mean - threshold) if greater else (threshold - mean)
    return float(1 - nct.cdf(student.ppf(0.975, n - 1), n - 1, shift / sd * math.sqrt(n)))


def power_equivalent(mean: float, sd: float, delta: float, n: int) -> float:
    """Power of two one-sided tests at α = 0.05 (the 90% interval inside ±δ)."""
    if n < 2 or sd <= 0:
        return math.nan
    q, root = student.ppf(0.95, n - 1), math.sqrt(n)
    upper = 1 - nct.cdf(q, n - 1, (delta - mean) / sd * root)
    lower = 1 - nct.cdf(q, n - 1, (delta + mean) / sd * root)
    return max(0.0, float(upper + lower - 1))


def smallest_n(power, target: float = POWER_TARGET) -> int | None:
    return next((n for n in range(2, N_MAX + 1) if power(n) >= target), None)


def rules(frame: pd.DataFrame) -> list[Rule]:
    drop = 100 * (per_seed(frame, "clean", "trained_block3")
                  - per_seed(frame, "clean_lam3", "trained_block3"))
    shift = {n: 100 * (per_seed(frame, "clean_lam3", f"trained_{n}")
                       - per_seed(frame, "clean", f"trained_{n}")) for n in LAYERS[:-1]}
    biggest = max(shift, key=lambda n: shift[n].mean())
    earlier = earlier_drops()
    pilot = "probe pilot, clean labels, 20 epochs, seeds 0-2"
    old = "earlier confirmatory run (seeds 300-304, 40% noise, one concurrent head)"
    half_target = ("half the 10-point memorization target: an effect of half the size the "
                   "study calls memorization is one it must be able to see")
    paper = "the paper's own number: the regularizer's test gain is up to +1.5 points"
    # the clean-label rows' preconditions, read at the small run's length where the pilot has
    # it (the 60-epoch arm), else on the 20-epoch arm
    regime = "clean_60ep" if "clean_60ep" in set(frame["arm"]) else "clean"
    memory = memorizes(frame, regime)
    layer_excess = {n: excess(frame, regime, n) for n in LAYERS}
    first, deepest = layer_excess[LAYERS[0]], layer_excess[LAYERS[-1]]
    at_length = f"probe pilot, clean labels, {'60' if regime == 'clean_60ep' else '20'} " \
                "epochs, seeds 0-2"
    top = max(layer_excess.values(), key=lambda v: v.mean())
    target = (top.mean() >= 10, f"largest layer excess {top.mean():.1f} points, below the "
                                "10-point memorization target")
    out = [
        Rule("depth", "rise: deepest minus first layer excess (points)",
             (deepest - first).to_numpy(), at_length, 0.0, True, 5.0, half_target, target),
        Rule("levels", "deepest layer's excess (points; rule: > 10)", deepest.to_numpy(),
             at_length, 10.0, True, 5.0, half_target),
        Rule("levels:first", "first layer's excess (points; rule: < 5)", first.to_numpy(),
             at_length, 5.0, False, 5.0, "the rule's own 'near zero' bound"),
        Rule("early_rise", "lead: divergence minus onset epoch (epochs)",
             onset_lead(frame).dropna().to_numpy(), pilot, 0.0, True, 2.0,
             "one measurement interval (2 epochs): 'slightly before' cannot be told apart "
             "from coinciding at a finer grain", memory),
        Rule("regularizer_works", "probe drop at λ = 3, last layer (points; rule: >= 5)",
             drop.to_numpy(), pilot, 5.0, True, 5.0, half_target, memory),
        Rule("shift", f"largest earlier-layer change under λ = 3 ({biggest}, points)",
             shift[biggest].to_numpy(), pilot, 0.0, True, 2.0,
             "a fifth of the memorization target: a shift smaller than the probes' own "
             "layer-to-layer spread is not one", memory),
        *[Rule(key, f"{key.split(':')[1]} drop at its strongest (points)", values, old, 0.0,
               True, 2.0, "a fifth of the memorization target, as for shift", memory)
          for key, values in earlier.items() if key.startswith("regularizers:")],
        Rule("all_layers_test", "test change, all layers at the largest λ (points; rule: "
             "< 1)", earlier["all_layers_test"], old, 1.0, False, 1.5, paper),
        Rule("noise", "test gain, best λ vs 0 at the highest noise (points)",
             earlier["noise"], old, 0.0, True, 1.5, paper),
    ]
    return out


def planned(r: Rule) -> dict:
    """One rule's row of the power table."""
    v = r.values[~np.isnan(r.values)]
    mean = float(v.mean()) if len(v) else math.nan
    sd = float(v.std(ddof=1)) if len(v) > 1 else math.nan
    clear = smallest_n(lambda n: power_clear(mean, sd, r.threshold, r.greater, n))
    equiv = smallest_n(lambda n: power_equivalent(mean, sd, r.delta, n))
    options = [(n, verdict) for n, verdict in ((clear, "holds"), (equiv, "does not hold (no "
               "effect as large as δ)")) if n is not None]
    if not options and len(v) > 1:  # on the wrong side of its threshold: the n to say so
        wrong = smallest_n(lambda n: power_clear(mean, sd, r.threshold, not r.greater, n))
        options = [(wrong, "does not hold")] if wrong is not None else []
    n, expected = min(options) if options else (None, f"not decidable within {N_MAX} seeds")
    held, why = r.precondition
    if not held:
        n, expected = None, f"precondition failed in the pilot ({why})"
        registered = "precondition failed at this scale: no n planned"
    else:
        registered = (f"n = {max(n, 5)}" if n is not None and n <= N_BUDGET else
                      f"not run at this scale (needs n = {n if n is not None else f'> {N_MAX}'})")
    return {"rule": r.id, "quantity": r.quantity, "source": r.source, "pilot_n": len(v),
            "precondition": "held" if held else f"failed: {why}",
            "mean": round(mean, 3), "sd": round(sd, 3), "threshold": r.threshold,
            "direction": ">" if r.greater else "<", "delta": r.delta,
            "delta_reason": r.delta_reason,
            "power_at_budget": round(power_clear(mean, sd, r.threshold, r.greater, N_BUDGET), 3),
            "n_clear_80": clear, "n_equivalent_80": equiv, "n_needed": n,
            "expected_verdict": expected, "registered": registered}


def power_table(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame([planned(r) for r in rules(frame)])


def spread_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per row, the per-seed SD with one probe (the mean over probes j of the SD over seeds of
    probe j alone) and with the mean of the K probes; test accuracy's SD with 10k and 1k
    images."""
    k = int(frame.loc[frame["probe"].astype(str).str.isdigit(), "probe"].astype(int).max()) + 1
    rows = []
    for variant in ("gap", "grid2"):
        def sd_of(fn):
            one = np.mean([fn(str(j)).std(ddof=1) for j in range(k)])
            return one, fn(None).std(ddof=1)

        def ex(arm, layer, variant=variant):
            return lambda p: 100 * (per_seed(frame, arm, f"trained_{layer}", p, variant)
                                    - per_seed(frame, arm, f"frozen_{layer}", p, variant))
        quantities = {f"excess {n} (clean)": ex("clean", n) for n in LAYERS}
        quantities["rise (clean)"] = lambda p: ex("clean", "block3")(p) - ex("clean",
                                                                            "block1")(p)
        quantities["drop block3, λ = 3"] = lambda p, v=variant: 100 * (
            per_seed(frame, "clean", "trained_block3", p, v)
            - per_seed(frame, "clean_lam3", "trained_block3", p, v))
        for n in LAYERS[:-1]:
            quantities[f"change {n}, λ = 3"] = lambda p, n=n, v=variant: 100 * (
                per_seed(frame, "clean_lam3", f"trained_{n}", p, v)
                - per_seed(frame, "clean", f"trained_{n}", p, v))
        for name, fn in quantities.items():
            one, many = sd_of(fn)
            rows.append({"row": name, "variant": variant, "mean": round(fn(None).mean(), 3),
                         "sd_1_probe": round(one, 3), f"sd_{k}_probes": round(many, 3)})
    for arm in sorted(frame["arm"].unique()):
        for quantity in ("test_acc_10k", "test_acc_1k"):
            v = 100 * per_seed(frame, arm, quantity, variant="test")
            rows.append({"row": f"{quantity} ({arm})", "variant": "test",
                         "mean": round(v.mean(), 3), "sd_1_probe": round(v.std(ddof=1), 3)})
    for quantity in ("test_acc_10k", "test_acc_1k"):  # what a paired test-accuracy row reads
        v = 100 * (per_seed(frame, "clean_lam3", quantity, variant="test")
                   - per_seed(frame, "clean", quantity, variant="test"))
        rows.append({"row": f"{quantity}: λ = 3 minus λ = 0 (clean)", "variant": "test",
                     "mean": round(v.mean(), 3), "sd_1_probe": round(v.std(ddof=1), 3)})
    return pd.DataFrame(rows)


def main() -> int:
    if not PILOT.exists():
        print(f"rlp_power: {PILOT.name} is missing; run pilots/rlp_probe_pilot.py first",
              file=sys.stderr)
        return 2
    frame = pd.read_csv(PILOT)
    spread_table(frame).to_csv(SPREAD, index=False)
    table = power_table(frame)
    table.to_csv(POWER, index=False)
    print(table.drop(columns=["delta_reason", "quantity", "source"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
