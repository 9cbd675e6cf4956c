"""A tiny training run, executed in one process by the tests and in two by torchrun."""

import sys

import torch

from memlib import distributed
from memlib.models import MLP
from memlib.seed import seed_everything
from memlib.train import TrainSpec, train


def tiny_run():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(256, 12, generator=g), torch.randint(0, 3, (256,), generator=g)
    seed_everything(0)
    model = MLP(12, (32,), 3)
    spec = TrainSpec(epochs=3, batch_size=64, optimizer="sgd", lr=0.1, seed=0, device="auto")
    history = train(model, (x, y), spec, eval_sets={"train": (x, y)})
    return model.state_dict(), history


if __name__ == "__main__":
    distributed.init_from_env()
    weights, history = tiny_run()
    if distributed.is_main():
        torch.save({"weights": weights, "history": history.to_dict("list")}, sys.argv[1])
