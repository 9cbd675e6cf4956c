import pytest
import torch

from memlib.config import ConfigError
from memlib.models import MLP
from memlib.seed import seed_everything
from memlib.train import FitCriterion, TensorBatches, TrainSpec, fit_tracker, lr_factor, train


def tiny_random_labels(n=256, d=20, classes=4):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, d, generator=g), torch.randint(0, classes, (n,), generator=g)


def fit(seed=0, **spec):
    x, y = tiny_random_labels()
    seed_everything(seed)
    model = MLP(20, (128,), 4)
    spec = TrainSpec(**{"epochs": 5, "batch_size": 32, "lr": 3e-3, "seed": seed, **spec})
    history = train(model, (x, y), spec, eval_sets={"train": (x, y)})
    return model, history


def test_memorizes_random_labels():
    _, history = fit(epochs=80, lr=5e-3)
    assert history["train_acc"].iloc[-1] == 1.0
    assert history["train_acc"].iloc[0] < 0.5


def test_full_batch_and_optimizers_learn():
    for optimizer in ("sgd", "adam", "adamw", "muon"):
        lr = 0.5 if optimizer in ("sgd", "muon") else 1e-2
        _, history = fit(epochs=40, batch_size=None, optimizer=optimizer, lr=lr)
        assert history["train_loss"].iloc[-1] < history["train_loss"].iloc[1], optimizer


def test_fused_adam_learns_the_same_run_up_to_rounding():
    for optimizer in ("adam", "adamw"):
        plain, hp = fit(epochs=30, optimizer=optimizer, lr=1e-2, weight_decay=1e-3)
        fused, hf = fit(epochs=30, optimizer=optimizer, lr=1e-2, weight_decay=1e-3, fused=True)
        again, ha = fit(epochs=30, optimizer=optimizer, lr=1e-2, weight_decay=1e-3, fused=True)
        assert hf.equals(ha)  # deterministic
        assert hf["train_loss"].iloc[-1] < hf["train_loss"].iloc[1]
        assert hf["train_loss"].to_numpy() == pytest.approx(hp["train_loss"].to_numpy(),
                                                           rel=1e-3, abs=1e-4)


def test_same_seed_same_result_bitwise():
    a, ha = fit(seed=3, schedule="cosine")
    b, hb = fit(seed=3, schedule="cosine")
    assert ha.equals(hb)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    _, hc = fit(seed=4)
    assert not ha["train_loss"].equals(hc["train_loss"])


def test_batches_cover_every_index_once():
    x, y = tiny_random_labels(n=100)
    seen = torch.cat([idx for _, _, idx in TensorBatches(x, y, 32, seed=1)])
    assert sorted(seen.tolist()) == list(range(100))
    for xb, yb, idx in TensorBatches(x, y, 32, seed=1):
        assert torch.equal(xb, x[idx]) and torch.equal(yb, y[idx])


def test_callbacks_add_metrics_and_max_steps_stops():
    x, y = tiny_random_labels()
    seen = []

    def record(state):
        state.row["norm"] = sum(p.norm().item() for p in state.model.parameters())
        seen.append(state.epoch)

    history = train(MLP(20, (16,), 4), (x, y), TrainSpec(epochs=3, batch_size=32, max_steps=10),
                    callbacks=[record])
    assert seen == [0, 1, 2]  # epoch 0 is before training; step 10 ends epoch 2
    assert history["step"].iloc[-1] == 10 and "norm" in history


def test_warmup_cosine_schedule():
    spec = TrainSpec(epochs=10, schedule="warmup_cosine", warmup_epochs=2)
    factor = lr_factor(spec, steps_per_epoch=10)
    assert factor(0) == 0.05 and factor(19) == 1.0
    assert abs(factor(100)) < 1e-12
    assert lr_factor(TrainSpec(), 10) is None


class Killed(Exception):
    pass


class IndexedTensors(torch.utils.data.Dataset):
    """A map-style dataset yielding (x, y, index), like memlib.imagenet's folders."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i], i


def test_dataset_batches_keep_indices_and_resume_exactly(tmp_path):
    from memlib.train import dataset_batches

    x, y = tiny_random_labels(n=100)
    seen = []

    def run(checkpoint=None, stop=None):
        seed_everything(0)
        model = MLP(20, (16,), 4, dropout=0.1)
        loader = dataset_batches(IndexedTensors(x, y), batch_size=16, seed=3, workers=0)

        def record(state):
            seen.append(state.batch)
            if stop is not None and state.step == stop:
                raise Killed

        spec = TrainSpec(epochs=3, batch_size=16, lr=1e-2, seed=0)
        history = train(model, loader, spec, step_callbacks=[record], checkpoint=checkpoint)
        return model, history

    reference, ref_history = run()
    for bx, by, idx in seen:  # sample indices survive the DataLoader
        assert torch.equal(bx, x[idx]) and torch.equal(by, y[idx])
    first_epoch = torch.cat([b[2] for b in seen[:7]])
    assert sorted(first_epoch.tolist()) == list(range(100))  # each sample once per epoch
    assert not torch.equal(first_epoch, torch.cat([b[2] for b in seen[7:14]]))  # reshuffled
    with pytest.raises(Killed):
        run(tmp_path / "ckpt.pt", stop=10)  # killed in epoch 2; resumes from epoch 1's end
    resumed, history = run(tmp_path / "ckpt.pt")
    assert history.equals(ref_history)
    for p, q in zip(reference.parameters(), resumed.parameters()):
        assert torch.equal(p, q)


def test_channels_last_trains_the_same_convolutions():
    from memlib.models import SmallCNN

    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(64, 1, 12, 12, generator=g), torch.randint(0, 3, (64,), generator=g)
    weights = []
    for channels_last in (False, True):
        seed_everything(0)
        model = SmallCNN(1, 3, channels=(4, 8, 8))
        train(model, (x, y), TrainSpec(epochs=2, batch_size=16, seed=0,
                                       channels_last=channels_last))
        conv = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)][-1]
        assert conv.weight.is_contiguous(memory_format=torch.channels_last) == channels_last
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    torch.testing.assert_close(weights[0], weights[1], rtol=1e-4, atol=1e-5)


def test_compiled_forward_matches_eager_and_keeps_taps():
    from memlib.models import taps

    x, y = tiny_random_labels(n=64)
    weights = []
    for compile in (False, True):
        seed_everything(0)
        model = MLP(20, (16,), 4)
        seen = []

        def step(forward, batch, seen=seen):
            with taps(forward, ["act1"]) as outs:  # names resolve through the compiled wrapper
                loss = torch.nn.functional.cross_entropy(forward(batch[0]), batch[1])
            seen.append(outs["act1"].shape)
            return loss

        train(model, (x, y), TrainSpec(epochs=1, batch_size=32, seed=0, compile=compile),
              step=step)
        assert seen == [torch.Size([32, 16])] * 2
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    torch.testing.assert_close(weights[0], weights[1], rtol=1e-4, atol=1e-5)


# --- training to a declared fit -----------------------------------------------------------


def fit_to_criterion(criterion, seed=0, epochs=30, checkpoint=None, flipped=None):
    """Train the tiny random-label MLP with a fit tracker; (model, history, memo)."""
    x, y = tiny_random_labels()
    seed_everything(seed)
    model = MLP(20, (128,), 4)
    memo: dict = {}

    def scores(state):
        with torch.no_grad():
            hit = model(x).argmax(1) == y
        return hit.float().mean().item(), (None if flipped is None
                                           else hit[flipped].float().mean().item())

    spec = TrainSpec(epochs=epochs, batch_size=32, lr=2e-2, seed=seed, schedule="cosine")
    history = train(model, (x, y), spec, callbacks=[fit_tracker(criterion, scores, memo)],
                    memo=memo, checkpoint=checkpoint)
    return model, history, memo


def test_fit_criterion_met():
    criterion = FitCriterion(train_acc=0.99, flipped_acc=0.95)
    assert criterion.met(0.99, 0.95) and criterion.met(1.0, None)
    assert not criterion.met(0.98, 1.0) and not criterion.met(1.0, 0.9)
    with pytest.raises(ConfigError):
        FitCriterion(train_acc=0.0)
    with pytest.raises(ConfigError):
        FitCriterion(epochs_after=-1)


def test_training_stops_the_declared_epochs_after_the_fit():
    recorded = fit_to_criterion(FitCriterion(0.99, 0.95, epochs_after=None))[1]
    fitted = recorded[recorded["fit_train_acc"] >= 0.99]["epoch"]
    assert len(fitted) and len(recorded) == 31  # without epochs_after: every epoch runs
    first = int(fitted.iloc[0])
    model, history, memo = fit_to_criterion(FitCriterion(0.99, 0.95, epochs_after=3))
    assert memo["fit_epoch"] == first < 27
    assert history["epoch"].iloc[-1] == first + 3
    assert history["fit_train_acc"].iloc[-1] >= 0.99
    # the epochs before the stop are those of the unstopped run: the schedule spans the maximum
    assert history["train_loss"].equals(recorded["train_loss"].iloc[:first + 4])
    # same seed, same stopping epoch, bit for bit
    again, history2, memo2 = fit_to_criterion(FitCriterion(0.99, 0.95, epochs_after=3))
    assert memo2 == memo and history2.equals(history)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters()))


def test_flipped_labels_must_be_fitted_too():
    x, y = tiny_random_labels()
    flipped = torch.arange(len(y)) < 64
    _, history, memo = fit_to_criterion(FitCriterion(0.5, 1.0, epochs_after=0), flipped=flipped)
    stop = history.iloc[-1]
    assert memo["fit_epoch"] == stop["epoch"]
    assert stop["fit_train_acc"] >= 0.5 and stop["fit_flipped_acc"] == 1.0
    earlier = history.iloc[1:-1]
    assert not ((earlier["fit_train_acc"] >= 0.5) & (earlier["fit_flipped_acc"] == 1.0)).any()


def test_never_fitted_runs_every_epoch_and_records_none():
    _, history, memo = fit_to_criterion(FitCriterion(1.0, 1.0, epochs_after=0), epochs=2)
    assert memo["fit_epoch"] is None and history["epoch"].iloc[-1] == 2


def test_a_stopped_run_resumes_stopped(tmp_path):
    path = tmp_path / "run.ckpt"
    criterion = FitCriterion(0.99, 0.95, epochs_after=2)
    _, history, memo = fit_to_criterion(criterion, checkpoint=path)
    assert path.exists()  # written after the stopping epoch, with the stop
    _, resumed, memo2 = fit_to_criterion(criterion, checkpoint=path)
    assert resumed.equals(history) and memo2 == memo
