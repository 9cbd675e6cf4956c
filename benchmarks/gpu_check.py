"""The GPU check: every study's full preset, its lists shrunk, run by the study's own code.

Writes fake data in the real on-disk formats (CIFAR-10/100 python pickles, MNIST and
Fashion-MNIST IDX files, an ImageFolder of JPEGs for the ImageNet arm of study 1; the real
Fashion-MNIST from the Debian folder when it is there), of real size on a GPU (50,000
CIFAR training images) and tiny with --device cpu, and points memlib at it (MEMLIB_DATA,
with a fresh cache and results folder). Then, per study, runs `memlib.<study>.run` on the
full preset with one seed, few conditions and --epochs epochs, and prints: seconds per
epoch of the training set, the GPU's busy share (sampled every 0.2 s), its peak memory,
the longest stretch the GPU sat idle (CPU work), and the full preset's projected GPU-hours:
the measured seconds scaled by the full preset's training FLOPs over the check's
(benchmarks/gpu_hours.py counts both; the check's fixed costs, such as analyses and
sub-experiments gpu_hours.py leaves out, scale up with it, so it errs high). Fake data
trains at the speed of real data; the scores it gives mean nothing.

    python benchmarks/gpu_check.py                       # one GPU: sized for <= 8 minutes
    python benchmarks/gpu_check.py --device cpu --studies modarith,fisher   # tiny, on CPU
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import memlib  # noqa: F401  before numpy and torch (imported where used): it pins the CPU

STUDIES = ("modarith", "rlp", "rlp_imagenet", "fisher", "probes", "lens")


@dataclass
class Sizes:
    """Images per split of the fake datasets (CIFAR; MNIST-like; ImageNet per class)."""
    cifar_train: int
    cifar_test: int
    mnist_train: int
    mnist_test: int
    imagenet_classes: int
    imagenet_per_class: int


GPU_SIZES = Sizes(50_000, 10_000, 60_000, 10_000, 100, 30)
CPU_SIZES = Sizes(1_000, 200, 600, 200, 10, 6)


# ------------------------------------------------------------------------- fake data on disk


def _pixels(rng, n: int, size: int):
    import numpy as np

    return rng.integers(0, 256, size=(n, size), dtype=np.uint8)


def write_cifar(root: Path, classes: int, train: int, test: int, rng) -> None:
    """CIFAR-10 (five training batches) or CIFAR-100 (one) python pickles, labels balanced."""
    if classes == 10:
        folder, label_key, names_key = root / "cifar-10-batches-py", b"labels", b"label_names"
        files = {f"data_batch_{i}": train // 5 for i in range(1, 6)} | {"test_batch": test}
        meta = "batches.meta"
    else:
        folder, label_key, names_key = root / "cifar-100-python", b"fine_labels", \
            b"fine_label_names"
        files, meta = {"train": train, "test": test}, "meta"
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in files.items():
        labels = [i % classes for i in range(n)]
        with open(folder / name, "wb") as f:
            pickle.dump({b"data": _pixels(rng, n, 3072), label_key: labels}, f)
    with open(folder / meta, "wb") as f:
        pickle.dump({names_key: [f"class{i}".encode() for i in range(classes)]}, f)


def _idx(path: Path, array) -> None:
    import numpy as np

    header = struct.pack(">BBBB", 0, 0, 8, array.ndim) + struct.pack(f">{array.ndim}I",
                                                                      *array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def write_mnist_like(folder: Path, train: int, test: int, rng) -> None:
    """The four IDX files of (Fashion-)MNIST, labels balanced over ten classes."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", train), ("t10k", test)):
        _idx(folder / f"{prefix}-images-idx3-ubyte", _pixels(rng, n, 784).reshape(n, 28, 28))
        _idx(folder / f"{prefix}-labels-idx1-ubyte", np.arange(n) % 10)


def write_imagenet(folder: Path, classes: int, per_class: int, rng) -> None:
    """train/<wnid>/*.JPEG and val/<wnid>/*.JPEG, 256 x 256 noise (val: a fifth as many)."""
    import numpy as np
    from PIL import Image

    for split, count in (("train", per_class), ("val", max(1, per_class // 5))):
        for c in range(classes):
            wnid = folder / split / f"n{c:08d}"
            wnid.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                pixels = rng.integers(0, 256, size=(256, 256, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(wnid / f"{c}_{i}.JPEG", quality=90)


def write_data(root: Path, sizes: Sizes, studies: list[str], real_fashion: bool) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    if {"fisher"} & set(studies):
        write_cifar(root, 10, sizes.cifar_train, sizes.cifar_test, rng)
    if {"rlp", "lens"} & set(studies):
        write_cifar(root, 100, sizes.cifar_train, sizes.cifar_test, rng)
    if {"modarith", "probes"} & set(studies):
        write_mnist_like(root / "mnist", sizes.mnist_train, sizes.mnist_test, rng)
        if not real_fashion:
            write_mnist_like(root / "fashion_mnist", sizes.mnist_train, sizes.mnist_test, rng)
    if "rlp_imagenet" in studies:
        write_imagenet(root / "imagenet", sizes.imagenet_classes, sizes.imagenet_per_class, rng)


# ------------------------------------------------------------------- each study, shrunk


def shrunk(study: str, device: str, epochs: int, tiny: bool) -> dict:
    """The changes to a study's full preset: one seed, few conditions, `epochs` epochs."""
    rlp = dict(seeds=[0], epochs=epochs, layer_model_epochs=epochs, dropouts=[0.1],
               weight_decays=[1.0e-3], label_smoothings=[0.1], lambdas=[100.0],
               fractions=[0.5, 1.0], noise_rates=[0.4], noise_lambdas=[100.0],
               layer_models=["wrn"], device=device)
    if tiny:
        # a long tail from 100 to 1 needs 100 images in the largest class
        rlp |= dict(wrn_depth=10, wrn_width=1, validation_samples=100, batch_size=64,
                    long_tail_ratio=2.0)
    steps = 10 if tiny else 2000  # full-batch steps: enough that the per-run costs amortise
    changes = {
        "modarith": dict(alphas=[0.0, 0.4], seeds=[0], epochs=steps, log_every=steps // 2,
                         sweep_widths=[17, 65] if tiny else [65, 1025],
                         sweep_alphas=[0.5], sweep_activations=["relu"],
                         sweep_weight_decays=[0.1], sweep_epochs=steps, order_alphas=[0.5],
                         order_optimizers=["adamw"], order_lrs=[1.0e-3],
                         order_weight_decays=[0.1], order_epochs=steps, order_log_every=steps // 2,
                         variants=[], digits_alphas=[0.2], digits_epochs=steps,
                         image_samples=300 if tiny else 60_000, image_epochs=steps,
                         **(dict(p=31, width=65, spectra_neurons=16,
                                 digits_width=64, partition_fractions=[0.5, 1.0],
                                 eval_activations=["relu"]) if tiny else {})),
        "rlp": rlp,
        "rlp_imagenet": rlp | dict(layer_models=["vit_base_patch32_224"], lambdas=[1000.0],
                                   fractions=[1.0], noise_lambdas=[1000.0], weight_decays=[0.3],
                                   validation_samples=20 if tiny else 500,
                                   long_tail_ratio=2.0 if tiny else 10.0,
                                   measure_samples=40 if tiny else 1000,
                                   batch_size=8 if tiny else 256, workers=2 if tiny else 8,
                                   **({"image_size": 32} if tiny else {})),
        "fisher": dict(seeds=[0], corruptions=[0.0, 0.4], epochs=epochs, arch_models=[],
                       arch_epochs=epochs, human_label_sets=[], human_seeds=1, direct_checks=2,
                       early_epoch=1, **(dict(n_scatter=300, cnn_channels=[8, 8, 8],
                                              synthetic_n=50) if tiny else {})),
        "probes": dict(seeds=[100], epochs=epochs, heatmap_runs=1, heatmap_epochs=epochs,
                       standin_seeds=[120], standin_epochs=epochs, distilbert=False, null_draws=1,
                       heatmap_null_draws=1, curveball_trades=2,
                       **({"ssim_pairs": 20, "standin_train": 600, "standin_test": 200}
                          if tiny else {})),
        "lens": dict(noise_rates=[0.4], seeds=[0], null_draws=1,
                     study1_sets=[f"{k}={v}" for k, v in rlp.items()
                                  if k in ("epochs", "device", "wrn_depth", "wrn_width",
                                           "validation_samples", "batch_size")],
                     **({"scatter_samples": 200} if tiny else {})),
    }
    return changes[study]


def study_config(study: str, changes: dict, sets: dict | None = None):
    """The study's module, its full preset with `changes` and then `sets` (the values of
    `--set` its Config has), and the full preset itself."""
    from memlib import studies
    from memlib.config import build, to_dict
    from memlib.presets import params_file, read_params

    module = studies.module(study.removesuffix("_imagenet"))
    names = {f.name for f in dataclasses.fields(module.Config)}
    changes = changes | {k: v for k, v in (sets or {}).items() if k in names}
    if study == "rlp_imagenet":  # the CIFAR preset with the ImageNet arm's overrides
        base = read_params(params_file(Path("01_random_label_heads.yaml"), "full"))
        base |= read_params(params_file(Path("01_random_label_heads.imagenet.yaml"), "full"))
        config = build(module.Config, base)
    else:
        from memlib.studies import preset_config

        config = preset_config(study, "full")
    return module, build(module.Config, {**to_dict(config), **changes}), config


# --------------------------------------------------------------------------- GPU sampling


def utilization() -> int:
    """The GPU's busy percentage now: NVML through torch, else nvidia-smi."""
    import torch

    try:
        return torch.cuda.utilization()
    except Exception:  # torch without pynvml
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu",
                              "--format=csv,noheader,nounits",
                              f"--id={torch.cuda.current_device()}"],
                             capture_output=True, text=True, timeout=10)
        return int(out.stdout.split()[0])


@dataclass
class Sampler:
    """The GPU's utilisation every `every` seconds, in a thread."""
    every: float = 0.2
    samples: list[tuple[float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.wait(self.every):
            with contextlib.suppress(Exception):  # neither NVML nor nvidia-smi: no samples
                self.samples.append((time.perf_counter(), utilization()))

    def __enter__(self):
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.thread.join()

    def busy_share(self) -> float:
        return sum(u > 0 for _, u in self.samples) / len(self.samples) if self.samples else \
            math.nan

    def longest_idle(self) -> float:
        longest, since = 0.0, None
        for t, u in self.samples:
            if u == 0:
                since = t if since is None else since
                longest = max(longest, t - since)
            else:
                since = None
        return longest if self.samples else math.nan


# ------------------------------------------------------------------------ the projection


def check_work(study: str, config, n: int):
    """gpu_hours.py's training work of a study's config: (training FLOPs, sample-passes)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gpu_hours

    works = gpu_hours.works(study.removesuffix("_imagenet"), config, n)
    if study == "rlp":  # the fixed ImageNet line is the other arm's
        works = [w for w in works if "ImageNet" not in w.study]
    return (sum(3 * gpu_hours.forward_flops(w) * w.passes for w in works),
            sum(w.passes for w in works))


def run_one(study: str, device: str, epochs: int, tiny: bool, sizes: Sizes,
            sets: dict | None = None) -> dict:
    """Run one study's shrunk preset (with `sets` where its Config has them); its timings,
    GPU samples and projection."""
    import torch

    module, config, full = study_config(study, shrunk(study, device, epochs, tiny), sets)
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    sampler = Sampler()
    with sampler if cuda else contextlib.nullcontext():
        start = time.perf_counter()
        module.run(config)
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    n = (sizes.imagenet_classes * sizes.imagenet_per_class if study == "rlp_imagenet"
         else sizes.cifar_train)
    flops, passes = check_work(study, config, n)
    full_flops, _ = check_work(study, full, 50_000)
    epoch = n if study in ("rlp", "rlp_imagenet", "fisher", "lens") else passes / epochs
    return {"study": study, "seconds": seconds, "seconds_per_epoch": seconds * epoch / passes,
            "busy": sampler.busy_share() if cuda else math.nan,
            "peak_gb": torch.cuda.max_memory_allocated() / 2**30 if cuda else math.nan,
            "longest_idle_s": sampler.longest_idle() if cuda else math.nan,
            "projected_hours": seconds * full_flops / max(flops, 1.0) / 3600}


def profile_rlp(device: str, tiny: bool, sets: dict, rows: int = 25) -> None:
    """Twenty training steps of study 1's default full-preset run, after ten to warm up,
    under torch.profiler: the operators that take the device's time and the host's, so the
    next change aims at what they show. The rest of the one-epoch run goes unrecorded (a
    whole recorded epoch costs minutes of profiler overhead)."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.profiler import ProfilerActivity, profile, schedule

    from memlib.studies import rlp

    _, config, _ = study_config("rlp", shrunk("rlp", device, 1, tiny), sets)
    cuda = device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    steps_per_update = 2  # the model's optimizer and the heads' step once per training step
    start = time.perf_counter()
    with profile(activities=activities, schedule=schedule(
            wait=0, warmup=10 * steps_per_update, active=20 * steps_per_update,
            repeat=1)) as prof:
        hook = register_optimizer_step_post_hook(lambda *_: prof.step())
        try:
            rlp.train_run(rlp.spec(config))
        finally:
            hook.remove()
        if cuda:
            torch.cuda.synchronize()
    wall = time.perf_counter() - start
    events = prof.key_averages()
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    device_us = sum(getattr(e, "self_device_time_total", 0) or 0 for e in events)
    host_us = sum(e.self_cpu_time_total for e in events)
    print(f"profile: 20 training steps of study 1's full run (the one-epoch run took "
          f"{wall:.1f} s): kernels {device_us / 1e6:.2f} s, host {host_us / 1e6:.2f} s")
    print(events.table(sort_by=key, row_limit=rows, max_name_column_width=60))


def same_bits_rlp(device: str, tiny: bool, sets: dict) -> bool:
    """Study 1's default full-preset run, two epochs, trained twice from the same seed: the
    parameters that differ (none, on a deterministic setup) and the kernels that warned."""
    import torch

    from memlib.seed import nondeterministic_kernels
    from memlib.studies import rlp

    _, config, _ = study_config("rlp", shrunk("rlp", device, 2, tiny), sets)
    states = []
    for _ in range(2):
        out = rlp.train_run(rlp.spec(config), observe=lambda *_: [])
        states.append({**{f"model.{k}": v.detach().cpu() for k, v in
                          out["model"].state_dict().items()},
                       **{f"heads.{k}": v.detach().cpu() for k, v in
                          out["heads"].state_dict().items()}})
    different = [k for k in states[0] if not torch.equal(states[0][k], states[1][k])]
    print(f"same seed twice (study 1's full run, 2 epochs): {len(states[0]) - len(different)}"
          f" of {len(states[0])} tensors identical"
          + (f"; differ: {', '.join(different[:5])}" if different else "")
          + f"; kernels that warned: {', '.join(nondeterministic_kernels()) or 'none'}",
          flush=True)
    return not different


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (real sizes) or cpu (tiny)")
    parser.add_argument("--studies", default=",".join(STUDIES),
                        help=f"comma-separated, from: {', '.join(STUDIES)}")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--tiny", action="store_true",
                        help="tiny data and models on a GPU too (always on the CPU)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change a value of every checked study's shrunk preset that has "
                        "it, e.g. --set parallel_runs=1 (YAML values)")
    parser.add_argument("--profile", action="store_true",
                        help="after the check, profile two epochs of one study-1 run "
                        "(torch.profiler: the kernels and host calls that take the time)")
    parser.add_argument("--determinism", action="store_true",
                        help="after the check, train study 1's default full-preset run for two "
                        "epochs twice and compare the two models bit for bit")
    parser.add_argument("--work", type=Path, help="folder for the fake data, cache and results "
                        "(default: a temporary one, removed after)")
    args = parser.parse_args(argv)
    studies = [s for s in args.studies.split(",") if s]
    bad = [s for s in studies if s not in STUDIES]
    if bad or not studies:
        parser.error(f"unknown study {(bad or [''])[0]!r}; choose from: {', '.join(STUDIES)}")
    if args.epochs < 2:
        parser.error("--epochs must be at least 2 (study 3 needs two)")
    import torch

    from memlib.config import ConfigError

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("no CUDA device here; use --device cpu for the tiny check")
    if not (args.device.startswith("cuda") or args.device == "cpu"):
        parser.error(f"--device {args.device!r}: use cuda, cuda:N or cpu")
    sets = {}
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq or not key:
            parser.error(f"--set {item!r}: use KEY=VALUE")
        import yaml

        sets[key] = yaml.safe_load(value)
    tiny = args.tiny or args.device == "cpu"
    sizes = CPU_SIZES if tiny else GPU_SIZES
    work = args.work or Path(tempfile.mkdtemp(prefix="memlib-gpu-check-"))
    try:
        data = work / "data"
        real_fashion = not tiny and Path("/usr/share/datasets/fashion-mnist").is_dir()
        started = time.perf_counter()
        write_data(data, sizes, studies + ["rlp"] * (args.profile or args.determinism),
                   real_fashion)
        print(f"fake data written in {time.perf_counter() - started:.0f} s under {data}")
        os.environ.update(MEMLIB_DATA=str(data), MEMLIB_RESULTS=str(work / "results"),
                          MEMLIB_CACHE=str(work / "cache"))
        device = torch.cuda.get_device_name() if args.device != "cpu" else "cpu"
        print(f"{'study':13} {'s/epoch':>8} {'busy':>6} {'peak GB':>8} {'idle s':>7} "
              f"{'full preset GPU-h':>18}   ({device}, {args.epochs} epochs, "
              f"{sizes.cifar_train} CIFAR images)")
        for study in studies:
            try:
                r = run_one(study, args.device, args.epochs, tiny, sizes, sets)
            except ConfigError as err:
                print(f"gpu_check: {study}: {err}", file=sys.stderr)
                return 2
            hours = "-" if tiny else f"{r['projected_hours']:.3g}"  # tiny models: no projection
            print(f"{study:13} {r['seconds_per_epoch']:8.2f} {r['busy']:6.0%} "
                  f"{r['peak_gb']:8.1f} {r['longest_idle_s']:7.1f} {hours:>18}   "
                  f"({r['seconds']:.0f} s)", flush=True)
        if args.profile:
            profile_rlp(args.device, tiny, sets)
        if args.determinism:
            same_bits_rlp(args.device, tiny, sets)
        from memlib.seed import nondeterministic_kernels

        print(f"kernels that warned they are non-deterministic: "
              f"{', '.join(nondeterministic_kernels()) or 'none'}")
        print(f"check done in {time.perf_counter() - started:.0f} s")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
