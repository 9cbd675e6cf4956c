"""Expected GPU hours of each full preset, from the training work and a throughput.

For every study this counts the training runs of `params/full/` (following each study's
`run()`: sweeps, seeds, baselines), the sample-passes they make (examples x epochs) and the
forward FLOPs per example of each model (counted by torch's FlopCounterMode). Training costs
about 3x the forward FLOPs. On a GPU, `--measure` times a plain bf16 training step of each
model and converts sample-passes to hours with that measured rate; otherwise the hours
assume `--tflops` sustained training TFLOP/s: a lower bound, since small models (modular
arithmetic, the probes' MLPs, SmallCNN) are bound by kernel launches, not FLOPs.

    python benchmarks/gpu_hours.py                  # FLOP-based, assumed 100 TFLOP/s
    python benchmarks/gpu_hours.py --measure        # on a GPU: measured images/s per model

Evaluation, effective-rank tracking and probe sweeps are forward-only and left out (they
are a few percent of the training work at these presets).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from memlib.models import build as build_model
from memlib.studies import preset_config

CIFAR, IMAGENET = (3, 32, 32), (3, 224, 224)
IMAGENET_TRAIN = 1_281_167


@dataclass
class Work:
    study: str
    model: str
    in_shape: tuple[int, ...]
    num_classes: int
    runs: int
    passes: float  # examples x epochs summed over the runs
    batch: int
    model_kwargs: dict | None = None


def rlp_work(c, n: int = 50_000) -> list[Work]:
    """n: CIFAR-100's training images, or ImageNet's when the config trains on it (then the
    full ImageNet's when n is CIFAR's default)."""
    seeds = len(c.seeds)  # every condition runs once per seed
    full = seeds * (1 + len(c.dropouts) + len(c.weight_decays) + len(c.label_smoothings)
                    + len(c.lambdas) + 1  # λ sweep: last layer; all layers at the largest λ
                    + len(c.noise_rates) * (1 + len(c.noise_lambdas))
                    + 1)  # the default run trained from scratch on random labels (retraining)
    fractions = seeds * (sum(2 * f for f in c.fractions) - 1)  # λ in {0, best}; 1, λ 0 = base
    # 2 runs per seed on a long-tailed subset of 100 classes
    tail = seeds * 2 * sum(c.long_tail_ratio ** (-k / 99) for k in range(100)) / 100
    runs = full + seeds * (2 * len(c.fractions) - 1 + 2)
    if c.dataset == "imagenet":
        n = IMAGENET_TRAIN if n == 50_000 else n
        return [Work("rlp (ImageNet)", c.model, (3, c.image_size, c.image_size), 1000, runs,
                     n * c.epochs * (full + fractions + tail), c.batch_size)]
    main = Work("rlp (CIFAR-100)", c.model, CIFAR, 100, runs, n * c.epochs * (full + fractions
                                                                            + tail),
                c.batch_size, dict(depth=c.wrn_depth, width=c.wrn_width))
    others = [Work("rlp (CIFAR-100)", m, CIFAR, 100, seeds, seeds * n * c.layer_model_epochs,
                   c.batch_size, dict(cifar_stem=True) if m == "resnet18" else None)
              for m in c.layer_models if m != c.model]
    vit = Work("rlp (ImageNet, per run)", "vit_base_patch32_224", IMAGENET, 1000, 1,
               IMAGENET_TRAIN * 90, 1024)
    return [main, *others, vit]


def fisher_work(c, n: int = 50_000) -> list[Work]:  # n: CIFAR-10's training images
    grid = len(c.corruptions) * len(c.seeds) + len(c.human_label_sets) * c.human_seeds
    kwargs = {"smallcnn": dict(channels=c.cnn_channels), "resnet18": dict(cifar_stem=True)}
    work = [Work("fisher (CIFAR-10)", c.model, CIFAR, 10, grid, grid * n * c.epochs,
                 c.batch_size, kwargs.get(c.model))]
    arch = min(c.arch_seeds, len(c.seeds))  # runs per extra architecture
    return work + [Work("fisher (CIFAR-10)", m, CIFAR, 10, arch, arch * n * c.arch_epochs,
                        c.batch_size, kwargs.get(m)) for m in c.arch_models if m != c.model]


def modarith_work(c, n: int = 50_000) -> list[Work]:  # n: not used (no images)
    pairs = int(c.train_fraction * c.p ** 2)
    main = len(c.alphas) * len(c.seeds)
    work = [Work("modarith (main)", "modarith", (2 * c.p,), c.p, main,
                 main * pairs * c.epochs, pairs, dict(width=c.width))]
    sweep = len(c.sweep_alphas) * len(c.sweep_activations) * len(c.sweep_weight_decays)
    work += [Work("modarith (width sweep)", "modarith", (2 * c.p,), c.p, sweep,
                  sweep * pairs * c.sweep_epochs, pairs, dict(width=w)) for w in c.sweep_widths]
    return work


def probes_work(c, n: int = 50_000) -> list[Work]:
    per_pair = 12_000 * n // 50_000  # two MNIST classes (n: CIFAR's 50k, for scale)
    tasks = 2 * c.runs * len(c.datasets)  # easy and hard pair
    heatmap = 45 * c.heatmap_runs * len(c.datasets)
    return [Work("probes (pairs)", "mlp", (1, 28, 28), 2, tasks,
                 (tasks * c.epochs + heatmap * c.heatmap_epochs) * per_pair, c.batch_size,
                 dict(widths=(c.width,)))]


def make_model(w: Work) -> torch.nn.Module:
    if w.model == "modarith":
        width = w.model_kwargs["width"]
        return torch.nn.Sequential(torch.nn.Linear(w.in_shape[0], width, bias=False),
                                   torch.nn.ReLU(), torch.nn.Linear(width, w.num_classes,
                                                                    bias=False))
    return build_model(w.model, w.num_classes, w.in_shape, **(w.model_kwargs or {}))


def forward_flops(w: Work) -> float:
    model = make_model(w).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.zeros(2, *w.in_shape))
    return counter.get_total_flops() / 2


def measured_rate(w: Work, steps: int = 10) -> float:
    """Images/s of a plain bf16 AdamW training step at the preset's batch size."""
    device = torch.device("cuda")
    model = make_model(w).to(device)
    batch = min(w.batch, 4096)
    x = torch.randn(batch, *w.in_shape, device=device)
    y = torch.randint(0, w.num_classes, (batch,), device=device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def run(k):
        for _ in range(k):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()

    run(3)
    start = time.perf_counter()
    run(steps)
    return steps * batch / (time.perf_counter() - start)


def lens_work(c, n: int = 50_000) -> list[Work]:  # n: CIFAR-100's training images
    from memlib.studies import lens

    s = lens.study1_config(c)  # the lens trains study 1's full setting, watched
    runs = len(c.datasets) * len(c.noise_rates) * len(c.seeds)
    return [Work("lens (CIFAR-100)", s.model, CIFAR, 100, runs, runs * n * s.epochs,
                 s.batch_size, dict(depth=s.wrn_depth, width=s.wrn_width))]


WORK = {"rlp": rlp_work, "modarith": modarith_work, "fisher": fisher_work,
        "probes": probes_work, "lens": lens_work}


def works(study: str, config=None, n: int = 50_000) -> list[Work]:
    """The training work of `config` (default: the study's full preset), with n images in
    the CIFAR training set."""
    return WORK[study](config or preset_config(study, "full"), n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tflops", type=float, default=100.0,
                        help="assumed sustained training TFLOP/s when not measuring")
    parser.add_argument("--measure", action="store_true", help="time each model on this GPU")
    args = parser.parse_args()
    if args.measure and not torch.cuda.is_available():
        parser.error("--measure needs a GPU; without one the hours assume --tflops")
    basis = (f"measured on {torch.cuda.get_device_name()}" if args.measure
             else f"FLOP-based lower bound at {args.tflops:g} TFLOP/s sustained")
    print(f"GPU hours per full preset, {basis}")
    print(f"{'study':26} {'model':22} {'runs':>5} {'sample-passes':>14} {'GFLOP/ex':>9} "
          f"{'hours':>9}")
    totals: dict[str, float] = {}
    for work in (w for study in WORK for w in works(study)):
        flops = forward_flops(work)
        if args.measure:
            hours = work.passes / measured_rate(work) / 3600
        else:
            hours = 3 * flops * work.passes / (args.tflops * 1e12) / 3600
        totals[work.study] = totals.get(work.study, 0.0) + hours
        print(f"{work.study:26} {work.model:22} {work.runs:5d} {work.passes:14.3g} "
              f"{flops / 1e9:9.3g} {hours:9.3g}")
    for study, hours in totals.items():
        print(f"total {study}: {hours:.3g} GPU hours")
    print(f"all studies: {math.fsum(totals.values()):.3g} GPU hours ({basis})")


if __name__ == "__main__":
    main()
