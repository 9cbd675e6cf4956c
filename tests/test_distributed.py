"""Resume and multi-process training give the results of one uninterrupted process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ddp_worker import tiny_run

from memlib.models import MLP
from memlib.seed import seed_everything
from memlib.train import TrainSpec, train


class Interrupt(Exception):
    pass


def resumable_run(checkpoint, stop_after=None):
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(200, 10, generator=g), torch.randint(0, 4, (200,), generator=g)
    seed_everything(0)
    model = MLP(10, (32,), 4, dropout=0.2)  # dropout: the global RNG must be restored too

    def maybe_stop(state):
        if stop_after is not None and state.epoch == stop_after:
            raise Interrupt

    spec = TrainSpec(epochs=5, batch_size=32, lr=1e-2, schedule="cosine", seed=0)
    history = train(model, (x, y), spec, eval_sets={"train": (x, y)}, callbacks=[maybe_stop],
                    checkpoint=checkpoint)
    return model, history


def test_resume_is_bitwise_equal(tmp_path):
    reference, ref_history = resumable_run(None)
    with pytest.raises(Interrupt):
        resumable_run(tmp_path / "ckpt.pt", stop_after=3)
    resumed, history = resumable_run(tmp_path / "ckpt.pt")
    assert history.equals(ref_history)
    for p, q in zip(reference.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(p, q)


def test_two_gloo_processes_match_one(tmp_path):
    out = tmp_path / "ddp.pt"
    torchrun = Path(sys.executable).with_name("torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(Path(__file__).parent) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node=2",
         str(Path(__file__).with_name("ddp_worker.py")), str(out)],
        env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    ddp = torch.load(out, weights_only=False)
    weights, history = tiny_run()
    for name, value in weights.items():
        torch.testing.assert_close(ddp["weights"][name], value, rtol=1e-5, atol=1e-6)
    for key in ("train_loss", "train_acc"):
        torch.testing.assert_close(torch.tensor(ddp["history"][key]),
                                   torch.tensor(history[key].tolist()), rtol=1e-5, atol=1e-6)


def run_in_two_processes_and_one(study, sets, tmp_path, monkeypatch):
    """`torchrun --nproc_per_node=2 -m memlib run STUDY` and the same run in this process,
    each into its own cache directory; returns the two directories."""
    from memlib import cli

    args = ["run", study, "--scale", "smoke", *[a for s in sets for a in ("--set", s)]]
    torchrun = Path(sys.executable).with_name("torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MEMLIB_CACHE": str(tmp_path / "ddp")}
    result = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node=2", "-m",
                             "memlib", *args], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "one"))
    assert cli.main(args) == 0
    return tmp_path / "ddp", tmp_path / "one"


def assert_columns_close(a, b, columns, **tolerance):
    for column in columns:
        torch.testing.assert_close(torch.tensor(a[column].to_numpy()),
                                   torch.tensor(b[column].to_numpy()), equal_nan=True,
                                   **tolerance)


def test_fisher_runner_under_torchrun_matches_one_process(tmp_path, monkeypatch):
    """Sharded batches, gathered per-example features, one writer: the cached run equals
    the single-process one."""
    from memlib import cache

    sets = ["n_train=256", "n_test=128", "n_scatter=100", "corruptions=[0.4]", "epochs=2",
            "arch_models=[]", "direct_checks=0", "synthetic_n=60", "top_k=20",
            "attribution_seeds=[]"]
    ddp_dir, one_dir = run_in_two_processes_and_one("fisher", sets, tmp_path, monkeypatch)
    [ddp_file] = ddp_dir.glob("fisher-run-*.pt")
    [one_file] = one_dir.glob("fisher-run-*.pt")
    assert ddp_file.name == one_file.name  # same config and code: the same cache key
    ddp, one = cache.load(ddp_file), cache.load(one_file)
    assert_columns_close(ddp["history"], one["history"], ("train_loss", "test_acc", "er",
                                                          "noisy_fit"), rtol=1e-4, atol=1e-5)
    # the stored last layer at the er peak, and the measures computed over what each stored
    for part in ("h", "z"):
        torch.testing.assert_close(ddp["peak"][part], one["peak"][part], rtol=1e-3, atol=1e-5)
    measures = {"fisher-loo-exact": "delta", "fisher-grad-norms": "norms"}
    for name, field in measures.items():
        files = sorted(ddp_dir.glob(f"{name}-*.pt"))
        assert files and {f.name for f in files} == {f.name for f in one_dir.glob(f"{name}-*.pt")}
        for file in files:
            torch.testing.assert_close(cache.load(file)[field], cache.load(one_dir / file.name)[
                field], rtol=1e-3, atol=1e-6)


def test_rlp_runner_under_torchrun_matches_one_process(tmp_path, monkeypatch):
    """Random-label heads trained with averaged gradients, labels looked up by global sample
    index, accuracies summed over ranks: the default run equals the single-process one."""
    from memlib import cache
    from memlib.config import build
    from memlib.presets import params_file, read_params
    from memlib.studies import rlp

    sets = ["train_samples=256", "test_samples=128", "model=mlp", "layer_models=[mlp]", "epochs=2",
            "batch_size=32", "fractions=[1.0]", "seeds=[0]"]
    ddp_dir, one_dir = run_in_two_processes_and_one("rlp", sets, tmp_path, monkeypatch)
    params = read_params(params_file(Path("01_random_label_heads.py"), "smoke"))
    config = build(rlp.Config, {**params, **dict(s.split("=", 1) for s in sets)})
    name = rlp.cached_run.path(rlp.spec(config)).name
    ddp, one = cache.load(ddp_dir / name), cache.load(one_dir / name)
    columns = [c for c in one["history"].columns if c.startswith(("rlp_", "train_", "test_"))]
    assert len(columns) >= 6
    assert_columns_close(ddp["history"], one["history"], columns, rtol=1e-4, atol=1e-5)


def test_killed_cached_computation_resumes_its_runs_from_checkpoints(monkeypatch):
    """A study computation (several training runs, callbacks with running state) killed in
    its second run restarts from the checkpoints and gives the uninterrupted result."""
    from memlib import cache
    from memlib.process import checkpoint_dir

    monkeypatch.setenv("MEMLIB_CHECKPOINT_MINUTES", "1e-6")  # checkpoint every epoch
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(96, 10, generator=g), torch.randint(0, 3, (96,), generator=g)

    def compute(stop=None):
        runs = []
        for r in range(2):
            seed_everything(r)
            model = MLP(10, (16,), 3, dropout=0.2)
            memo = {"norms": []}

            def track(state, model=model, memo=memo, r=r):
                memo["norms"].append(sum(p.norm() for p in model.parameters()).item())
                if (r, state.epoch) == stop:
                    raise Interrupt

            history = train(model, (x, y), TrainSpec(epochs=4, batch_size=16, seed=r),
                            callbacks=[track], memo=memo)
            runs.append({"history": history, "norms": memo["norms"],
                         "weights": dict(model.state_dict())})
        return runs

    reference = compute()
    with pytest.raises(Interrupt):
        cache.cached("study", {"a": 1}, lambda: compute(stop=(1, 2)))
    entry = cache.entry_path("study", {"a": 1})
    stem, checkpoints = entry.stem, checkpoint_dir(entry)
    assert sorted(p.name for p in checkpoints.iterdir()) == [
        f"{stem}.1.ckpt", f"{stem}.2.ckpt"]
    resumed = cache.cached("study", {"a": 1}, compute)
    for ref, res in zip(reference, resumed):
        assert res["history"].equals(ref["history"]) and res["norms"] == ref["norms"]
        for name, value in ref["weights"].items():
            assert torch.equal(res["weights"][name], value)
    assert not any(checkpoints.iterdir())  # removed once the result is cached
