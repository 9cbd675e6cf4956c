import torch

from memlib.models import MLP
from memlib.seed import seed_everything
from memlib.train import TensorBatches, TrainSpec, lr_factor, train


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
