"""Hashes of the numerical operations the studies compute, and of each study's own first
steps and measures on tiny settings, under memlib's pins, on one thread.

Same library versions, same hashes on every x86-64 machine with AVX2 and FMA, whatever its
vendor: tests/test_vendor_ops.py compares them with tests/fixtures/vendor_hashes.json. An entry
that differs names an operation whose bits depend on the processor, although the pins fix
the instruction set. To see another vendor's dispatch without its hardware, run this script
under QEMU's user-mode emulator with another processor model (vendor string, CPUID leaves,
cache sizes; no AVX-512):

    PYTHONPATH=. qemu-x86_64 -cpu EPYC-Rome .venv/bin/python tests/vendor_ops.py > amd.json
    PYTHONPATH=. .venv/bin/python tests/vendor_ops.py --compare amd.json

(importing torch under emulation takes minutes; the computations themselves are tiny).
`--record PATH` writes the hashes with the machine they were computed on.
"""

import memlib  # noqa: F401, I001 - first: it pins the CPU dispatch before numpy and torch load
import argparse
import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np
import torch

RECORD = Path(__file__).parent / "fixtures" / "vendor_hashes.json"
VERSIONED = ("torch", "numpy", "scipy", "skimage")  # a new version of these moves bits


def digest(*arrays) -> str:
    """sha256 (12 hex digits) of the arrays' bytes; bf16 tensors as their float32 values."""
    parts = []
    for a in arrays:
        if isinstance(a, torch.Tensor):
            a = a.detach()
            a = a.float() if a.dtype == torch.bfloat16 else a
            a = a.cpu().numpy()
        parts.append(np.ascontiguousarray(a).tobytes())
    return hashlib.sha256(b"".join(parts)).hexdigest()[:12]


def params_digest(model: torch.nn.Module) -> str:
    return digest(*[p for p in model.parameters()])


# --------------------------------------------------------------------------- library ops

def library_ops() -> dict[str, str]:
    """The studies' kernels alone, on fixed inputs of the studies' shapes."""
    g = torch.Generator().manual_seed(0)
    out = {}
    for m, k, n in ((32, 784, 256), (1000, 650, 650), (3481, 65, 59), (113, 113, 512), (7, 3, 5)):
        a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
        out[f"sgemm_{m}x{k}x{n}"] = digest(a @ b, b.T @ a.T)
    a, b = torch.randn(20, 529, 65, generator=g), torch.randn(20, 65, 23, generator=g)
    out["baddbmm_modarith"] = digest(torch.baddbmm(torch.randn(20, 1, 23, generator=g), a, b))
    # Muon's Newton-Schulz iteration is bf16 GEMMs (matmul and addmm)
    x = torch.randn(65, 23, generator=g).bfloat16()
    gram = x.T @ x
    out["bf16_matmul"] = digest(gram, torch.addmm(gram, gram, gram, beta=-4.775, alpha=2.0315))
    for n in (65, 256):
        s = torch.randn(n, n + 7, generator=g, dtype=torch.float64)
        s = s @ s.T
        w, v = torch.linalg.eigh(s)
        out[f"eigh_f64_{n}"] = digest(w, v.abs(), torch.linalg.eigvalsh(s.float()))
    # study 2's spectra: batched rfft along the last axis, contiguous and transposed
    u = torch.randn(3, 65, 23, generator=g)
    f, ft = torch.fft.rfft(u, dim=-1), torch.fft.rfft(u.transpose(1, 2), dim=-1)
    out["rfft_irfft"] = digest(f.real, f.imag, ft.real, ft.imag,
                               torch.fft.irfft(f, n=23, dim=-1), f.angle())
    x = torch.randn(300, 70, generator=g)
    out["exp_log_tanh_softmax"] = digest(torch.exp(x), torch.log(x.abs() + 1), torch.tanh(x),
                                         torch.softmax(x, 1), torch.nn.functional.gelu(x))
    images, kernels = torch.randn(16, 3, 28, 28, generator=g), torch.randn(8, 3, 3, 3, generator=g)
    out["conv2d"] = digest(torch.nn.functional.conv2d(images, kernels, torch.randn(8, generator=g),
                                                      padding=1))
    r = np.random.default_rng(0)
    m = r.standard_normal((200, 201))
    out["numpy_matmul_eigvalsh_exp"] = digest(m @ m.T, np.linalg.eigvalsh(m @ m.T),
                                              np.exp(m), np.log(np.abs(m) + 1))
    import scipy.linalg
    import scipy.stats
    out["scipy_eigh_stats"] = digest(scipy.linalg.eigh(m @ m.T, eigvals_only=True),
                                     np.array([scipy.stats.spearmanr(m[0], m[1])[0],
                                               scipy.stats.t.sf(2.1, 7)]))
    from memlib.studies.probes.method import ssim_distance
    im = r.random((6, 28, 28))
    out["ssim"] = digest(np.array([ssim_distance(im[:3], im[3:])]))
    return out


# --------------------------------------------------------------------------- the studies

def random_images(n: int, shape, classes: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, *shape, generator=g), torch.randint(0, classes, (n,), generator=g)


def study1() -> dict[str, str]:
    """Random-label heads' models: the MLP and SmallCNN, fused Adam and SGD, a few steps."""
    from memlib import models
    from memlib.train import TrainSpec, train

    out = {}
    x, y = random_images(256, (3, 16, 16), 10, 1)
    for name, kw in (("mlp", {"widths": (64, 64)}), ("smallcnn", {"channels": (8, 16, 32)})):
        for opt, fused in (("adam", True), ("sgd", False)):
            torch.manual_seed(0)
            model = models.build(name, 10, (3, 16, 16), **kw)
            train(model, (x, y), TrainSpec(epochs=1, batch_size=64, optimizer=opt, lr=1e-2,
                                           fused=fused, seed=0), desc="vendor_ops")
            out[f"study1_{name}_{opt}"] = params_digest(model)
    return out


def study2() -> dict[str, str]:
    """Modular arithmetic: a few full-batch epochs of AdamW and of Muon, then the frequency
    filter, the phases and the four-subset accuracies."""
    from memlib.studies.modarith import method as ma
    from memlib.train import TrainSpec

    out = {}
    task = ma.make_task(23, "add", 0.8, seed=0)
    for opt, lr, wd in (("adamw", 1e-2, 0.1), ("muon", 0.02, 0.1)):
        spec = TrainSpec(epochs=8, batch_size=None, optimizer=opt, lr=lr, weight_decay=wd,
                         seed=0)
        res = ma.train_runs(task, (0.0, 0.5), (0, 1), 65, spec, "relu", log_every=4)
        w = res["weights"]
        out[f"study2_{opt}_weights"] = digest(*w.values())
        if opt == "adamw":
            g, residual = ma.frequency_filter(w)
            parts = ma.evaluate_parts(w, task, res["noisy"], res["mask"], ["relu", "quadratic"])
            out["study2_spectra_filter_phases"] = digest(
                ma.neuron_spectra(w), *g.values(), *residual.values(), ma.phase_error(w))
            out["study2_parts"] = digest(parts["acc"].to_numpy())
    return out


def study3() -> dict[str, str]:
    """Fisher rank: one epoch of the MLP (per-parameter Adam), its effective rank in both
    forms (D-space and Gram), and the exact and first-order leave-one-out attributions."""
    from memlib import models
    from memlib.seed import seed_everything
    from memlib.studies.fisher import method as fm
    from memlib.train import TrainSpec, train

    out = {}
    x, y = random_images(320, (1, 12, 12), 10, 2)
    seed_everything(0)
    model = models.build("mlp", 10, (1, 12, 12), widths=(64, 16))
    train(model, (x, y), TrainSpec(epochs=1, batch_size=32, optimizer="adam", lr=1e-3, seed=0),
          desc="vendor_ops")
    out["study3_mlp_epoch"] = params_digest(model)
    h, z = fm.last_layer(model, "mlp", x)
    big = fm.scatter_effective_rank(h, z, y)  # n = 320 > D = 170: D-space
    small = fm.scatter_effective_rank(h[:100], z[:100], y[:100])  # Gram form
    lam, zz = fm.decompose(h[:100], z[:100], y[:100])
    out["study3_er"] = digest(np.array([big, small]), lam, zz.abs())
    # the torch solver: the compiled one's bits are those of the machine's C compiler
    out["study3_loo"] = digest(fm.loo_exact(lam, zz, backend="torch"),
                               fm.loo_first_order(lam, zz))
    return out


def study4() -> dict[str, str]:
    """Task-complexity probes: the vmapped ensemble's Adam epoch (cosine schedule), and
    pruning, binarising and noise probes evaluated on the trained runs."""
    from memlib.studies.probes import method as pm
    from memlib.studies.probes import runs as pr

    out = {}
    x, y = random_images(200, (49,), 2, 3)
    params = pr.train_runs(x, y, (0, 1), 16, "relu", epochs=2, batch_size=50, lr=1e-2,
                           desc="vendor_ops")
    out["study4_ensemble"] = digest(*params.values())
    model = pr.make_mlp(16, "relu", 0, 49)
    one = pr.run_params(params, 0)
    names = list(one)
    gen = torch.Generator().manual_seed(4)
    variants = [one, pm.apply_probe(one, names, pm.binarize),
                pm.apply_probe(one, names, lambda w: pm.prune(w, 0.5)),
                pm.apply_probe(one, names, lambda w: pm.gaussian_noise(w, 0.5, gen))]
    out["study4_probes"] = digest(pm.accuracy_of_variants(model, variants, x, y, batch_size=64),
                                  *variants[3].values())
    return out


def hashes() -> dict[str, str]:
    torch.set_num_threads(1)  # as every computation below full scale runs
    return {**library_ops(), **study1(), **study2(), **study3(), **study4()}


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in VERSIONED:
        try:
            found[name] = version("scikit-image" if name == "skimage" else name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


def machine() -> dict:
    from memlib.process import cpu_model, dispatch_record, read_cpuinfo

    vendor = next((line.split(":", 1)[1].strip() for line in read_cpuinfo().splitlines()
                   if line.startswith("vendor_id")), platform.processor())
    record = dispatch_record()
    return {"cpu": cpu_model(read_cpuinfo()), "vendor": vendor, "machine": platform.machine(),
            "dispatch": record["dispatch"], "torch_cpu_capability": record["torch_cpu_capability"]}


def differing(a: dict[str, str], b: dict[str, str]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, help="write hashes, versions and machine here")
    parser.add_argument("--compare", type=Path, help="compare with this earlier output")
    args = parser.parse_args(argv)
    if args.compare and not args.compare.is_file():
        print(f"vendor_ops: no such file: {args.compare}", file=sys.stderr)
        return 2
    result = {"hashes": hashes(), "versions": versions(), "machine": machine()}
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n",
                               encoding="utf-8")
    if args.compare:
        other = json.loads(args.compare.read_text(encoding="utf-8"))
        diff = differing(result["hashes"], other["hashes"])
        print(f"{len(diff)} of {len(result['hashes'])} differ"
              f" ({result['machine']['cpu']} vs {other['machine']['cpu']})")
        for k in diff:
            print(f"  {k}: {result['hashes'].get(k)} vs {other['hashes'].get(k)}")
        return 1 if diff else 0
    if not args.record:
        print(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
