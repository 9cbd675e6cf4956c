"""The same bits on every x86-64 machine with AVX2, whatever its vendor: the studies' kernels
and first steps (tests/vendor_ops.py) hash as recorded in tests/fixtures/vendor_hashes.json, and
the pins select the processor-independent paths."""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from memlib import process

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import vendor_ops  # noqa: E402

PINNED = (process.dispatch_choice(None, process.cpu_flags(process.read_cpuinfo()))[0]
          == process.PINNED)
needs_pins = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not PINNED,
    reason="not an x86-64 CPU with AVX2 and FMA: nothing is pinned, the bits are the machine's")


def pinned_python(code: str, **env) -> str:
    """stdout of `code` in a fresh interpreter under memlib's pins (a test process's torch
    may have computed with other settings already)."""
    clean = {k: v for k, v in os.environ.items()
             if k not in process.PINS and k != process.DISPATCH_VARIABLE}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=True,
                          env={**clean, "PYTHONPATH": str(ROOT), **env})
    return done.stdout


@needs_pins
def test_studies_first_steps_hash_as_recorded():
    recorded = json.loads(vendor_ops.RECORD.read_text())
    if recorded["versions"] != vendor_ops.versions():
        pytest.skip(f"library versions {vendor_ops.versions()} are not those the hashes were "
                    f"recorded with ({recorded['versions']}): other versions, other bits")
    out = pinned_python("import sys, json; sys.path.insert(0, 'tests'); import vendor_ops; "
                        "print(json.dumps(vendor_ops.hashes()))")
    now = json.loads(out.splitlines()[-1])
    assert vendor_ops.differing(now, recorded["hashes"]) == [], (
        f"recorded on {recorded['machine']['cpu']}; these depend on the processor")


BF16_PATH = """
import memlib, json, torch
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
x = torch.randn(65, 23, generator=g).bfloat16()
gram = x.T @ x
with torch.backends.mkldnn.flags(enabled=False):
    aten = x.T @ x
print(json.dumps({"onednn_bf16": torch.ops.mkldnn._is_mkldnn_bf16_supported(),
                  "same_as_aten": bool(torch.equal(gram, aten))}))
"""


@needs_pins
def test_bf16_matmul_takes_atens_own_kernel():
    """Muon's bf16 Newton-Schulz GEMMs: oneDNN's bf16 kernels exist only on processors with
    AVX512-BF16 or AMX (some Intel and AMD ones, not others) and give other bits than ATen's
    own kernel; the oneDNN pin at AVX2 hides them, so every machine runs ATen's."""
    seen = json.loads(pinned_python(BF16_PATH).splitlines()[-1])
    assert seen == {"onednn_bf16": False, "same_as_aten": True}


def test_hash_differences_are_named():
    assert vendor_ops.differing({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == ["b", "c"]


def test_compare_with_a_missing_file_is_bad_input(tmp_path, capsys):
    assert vendor_ops.main(["--compare", str(tmp_path / "none.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_adam_and_adamw_are_fused_on_the_cpu():
    """The per-operation Adam takes torch's CPU sqrt, MKL's vector math: processor-dependent
    bits. Muon hands its 1-D parameters to AdamW, fused too."""
    import torch

    from memlib.train import TrainSpec, make_optimizers

    model = torch.nn.Linear(3, 2)
    for name in ("adam", "adamw", "muon"):
        optimizers = make_optimizers(model.parameters(), TrainSpec(optimizer=name))
        adams = [o for o in optimizers if isinstance(o, (torch.optim.Adam, torch.optim.AdamW))]
        assert adams and all(o.defaults["fused"] for o in adams), name


def test_square_roots_are_rounded_exactly():
    """Against C's sqrt (IEEE 754: correctly rounded); for floats through a double, which
    rounds the same for a square root."""
    import math

    import numpy as np
    import torch

    from memlib.studies.fisher.method import ieee_sqrt

    g = torch.Generator().manual_seed(0)
    for dtype, to in ((torch.float32, np.float32), (torch.float64, np.float64)):
        x = torch.rand(5_000, generator=g, dtype=dtype) ** 8
        exact = np.array([math.sqrt(v) for v in x.tolist()]).astype(to)
        assert ieee_sqrt(x).dtype == dtype
        assert np.array_equal(ieee_sqrt(x).numpy(), exact)
