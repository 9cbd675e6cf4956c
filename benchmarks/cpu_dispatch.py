"""Which CPU dispatch settings change the bits of a training run, and what memlib's pin costs.

The same short training (memlib's MLP and SmallCNN on random 28x28 images, one thread) runs
in a fresh process per setting: the libraries' own choice (`MEMLIB_CPU_DISPATCH=native`),
each library's setting alone on top of it, memlib's pins, and the pins over a caller's
contrary settings. Prints each setting's parameter hash, torch's CPU capability and seconds,
then `cost ratio: X` = pinned / native seconds, the best of `--repeats` alternating runs of
each (to damp the noise of a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "OPENBLAS_CORETYPE",
        "NPY_DISABLE_CPU_FEATURES", "MEMLIB_CPU_DISPATCH")  # the caller's are left out
NATIVE = {"MEMLIB_CPU_DISPATCH": "native"}
SETTINGS = {
    "native (the libraries choose)": NATIVE,
    "native + MKL_CBWR=COMPATIBLE": {**NATIVE, "MKL_CBWR": "COMPATIBLE"},
    "native + MKL_CBWR=AVX2": {**NATIVE, "MKL_CBWR": "AVX2"},
    "native + ATEN_CPU_CAPABILITY=default": {**NATIVE, "ATEN_CPU_CAPABILITY": "default"},
    "native + ATEN_CPU_CAPABILITY=avx2": {**NATIVE, "ATEN_CPU_CAPABILITY": "avx2"},
    "native + ONEDNN_MAX_CPU_ISA=AVX2": {**NATIVE, "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "pinned (memlib's default)": {},
    "pinned over ATEN=default, MKL_CBWR=AVX512": {"ATEN_CPU_CAPABILITY": "default",
                                                  "MKL_CBWR": "AVX512"},
}

CHILD = """
import hashlib, json, sys, time
import memlib  # pins the dispatch unless MEMLIB_CPU_DISPATCH=native
import torch
from memlib.models import MLP, SmallCNN
from memlib.train import TensorBatches, TrainSpec, train

samples, epochs = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
x, y = torch.rand(samples, 1, 28, 28, generator=g), torch.randint(0, 10, (samples,), generator=g)
result = {"capability": torch.backends.cpu.get_cpu_capability(), "seconds": 0.0}
for name, make in (("mlp", lambda: MLP(784, (256, 256), 10)),
                   ("smallcnn", lambda: SmallCNN(1, 10, channels=(16, 32, 64)))):
    torch.manual_seed(0)
    model = make()
    start = time.perf_counter()
    train(model, TensorBatches(x, y, 128), TrainSpec(epochs=epochs, batch_size=128))
    result["seconds"] += time.perf_counter() - start
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters()))
    result[name] = digest.hexdigest()[:12]
print(json.dumps(result))
"""


def run(env: dict[str, str], samples: int, epochs: int) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in PINS}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), clean.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", CHILD, str(samples), str(epochs)],
                          env={**clean, **env}, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results = {name: run(env, args.samples, args.epochs) for name, env in SETTINGS.items()}
    for name, r in results.items():
        print(f"{name:44s} {r['capability']:8s} mlp {r['mlp']} smallcnn {r['smallcnn']} "
              f"{r['seconds']:6.2f} s")
    best = {"native": [], "pinned": []}
    for _ in range(args.repeats):
        best["native"].append(run(NATIVE, args.samples, args.epochs)["seconds"])
        best["pinned"].append(run({}, args.samples, args.epochs)["seconds"])
    print(f"best of {args.repeats}: native {min(best['native']):.2f} s, "
          f"pinned {min(best['pinned']):.2f} s")
    print(f"cost ratio: {min(best['pinned']) / min(best['native']):.3f}")


if __name__ == "__main__":
    main()
