"""A training run killed with SIGKILL and resumed from its checkpoints ends bit for bit where
the uninterrupted run ends: study 1's run (its model and its random-label heads, each with its
optimizer), its frozen baseline (one training per head) and a lens run (its observer's running
state), killed at several points in separate processes (tests/resume_child.py)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from memlib import cache
from memlib.models import MLP
from memlib.seed import seed_everything
from memlib.train import TrainSpec, train

TESTS = Path(__file__).resolve().parent


def child(cache_dir: Path, die_at: int = 0) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{TESTS.parent}{os.pathsep}{TESTS}",
           "MEMLIB_CACHE": str(cache_dir), "MEMLIB_CHECKPOINT_MINUTES": "1e-9",
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(TESTS / "resume_child.py"), str(die_at)],
                          env=env, capture_output=True, text=True, timeout=300)


def entries(cache_dir: Path) -> dict:
    return {path.name: cache.load(path) for path in sorted(cache_dir.glob("*.pt"))}


def identical(a, b) -> bool:
    """Equal in every bit: tensors in dtype and value, frames in columns and values (NaN where
    NaN), numbers exactly."""
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and torch.equal(a.nan_to_num(), b.nan_to_num())
                and torch.equal(a.isnan(), b.isnan()) if a.is_floating_point()
                else isinstance(b, torch.Tensor) and torch.equal(a, b))
    if isinstance(a, pd.DataFrame):
        return isinstance(b, pd.DataFrame) and a.equals(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            identical(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(identical, a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


def test_runs_killed_at_several_points_resume_to_the_uninterrupted_bits(tmp_path):
    done = child(tmp_path / "uninterrupted")
    assert done.returncode == 0, done.stderr
    reference = entries(tmp_path / "uninterrupted")
    assert len(reference) == 3
    total = int(done.stdout.split()[-1])
    # in study 1's run (its third epoch), in the baseline's second head, in the lens run
    for die_at in (13, total // 2 + 3, total - 7):
        folder = tmp_path / f"killed-at-{die_at}"
        killed = child(folder, die_at)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert list((folder / "checkpoints").glob("*.ckpt"))  # it had something to resume
        resumed = child(folder)
        assert resumed.returncode == 0, resumed.stderr
        assert int(resumed.stdout.split()[-1]) < total  # it did resume, not start over
        got = entries(folder)
        assert got.keys() == reference.keys()
        for name in reference:
            assert identical(got[name], reference[name]), f"{name} killed at batch {die_at}"
        assert not list((folder / "checkpoints").glob("*.ckpt"))


def tiny_run(checkpoint: Path | None, heads_registered: bool = True, epochs: int = 3):
    seed_everything(0)
    x, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
    model, head = MLP(8, (16,), 2), torch.nn.Linear(2, 2)
    spec = TrainSpec(epochs=epochs, batch_size=16, lr=1e-2)
    optimizers = [torch.optim.Adam(model.parameters(), lr=1e-2),
                  torch.optim.Adam(head.parameters(), lr=1e-2)]

    def step(net, batch):
        out = net(batch[0])
        return (torch.nn.functional.cross_entropy(out, batch[1])
                + torch.nn.functional.cross_entropy(head(out), batch[1]))

    train(model, (x, y), spec, step=step, optimizers=optimizers, checkpoint=checkpoint,
          modules={"head": head} if heads_registered else None)
    return model, head


def test_a_registered_module_resumes_with_its_trained_weights(tmp_path):
    _, head = tiny_run(None)
    tiny_run(tmp_path / "run.ckpt", epochs=2)  # a run stopped after epoch 2, then extended
    _, resumed = tiny_run(tmp_path / "run.ckpt")
    assert torch.equal(head.weight, resumed.weight)


def test_a_trained_module_the_checkpoint_would_not_hold_is_refused(tmp_path):
    tiny_run(None, heads_registered=False)  # no checkpoint: nothing to lose
    with pytest.raises(ValueError, match="2 parameter tensors of no module the checkpoint"):
        tiny_run(tmp_path / "run.ckpt", heads_registered=False)
