"""Does a probe with a hidden layer see a random-label excess at the SmallCNN's deepest block
on clean labels? `python pilots/rlp_hidden_probe_pilot.py` (about a minute, from the cache)
writes pilots/01_random_label_heads_hidden_probes.csv.

The small preset's default runs of seeds 600-604 (study 1's confirmatory run before its
replication: already used, and cached, so nothing trains) stored each block's globally pooled
features of the 1,000 training images before and after training. On each, K = 8 probes per
width (0: linear, as the claims read; else Linear-ReLU-Linear with that many hidden units),
each with its own random-label draw, train 30 epochs of Adam (lr 1e-2, batches of 128), as
the registered probes do. Each row: a seed's block, its trained and frozen-initialisation
accuracy (mean over the 8 probes) and their difference, the excess the clean-label rules
presuppose at the deepest block. The question: which probe capacity, if any, shows an excess
there without a frozen baseline that memorizes by itself.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import memlib  # noqa: F401  before torch (imported where used): it pins the CPU dispatch

OUT = Path(__file__).with_name("01_random_label_heads_hidden_probes.csv")
SEEDS = (600, 601, 602, 603, 604)
HIDDEN = (0, 64, 256)
K, EPOCHS, LR, BATCH = 8, 30, 1e-2, 128


def probe_accuracy(features, labels, n_random: int, hidden: int, seed: int):
    """The K probes' training accuracies: K independent probes trained as one batch, probe j
    on labels[j], each initialised as nn.Linear is from its own generator."""
    import torch
    import torch.nn.functional as F

    from memlib.seed import generator

    x = features.float()
    x = (x - x.mean(0)) / x.std(0).clamp(min=1e-6)
    n, d = x.shape
    sizes = [d, hidden, n_random] if hidden else [d, n_random]
    params = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        bound = 1 / math.sqrt(a)
        draw = torch.stack([torch.rand(a * b + b, generator=generator(seed + 100 * i + j))
                            for j in range(K)]) * 2 - 1
        params += [(draw[:, :a * b].reshape(K, a, b) * bound).requires_grad_(),
                   (draw[:, a * b:] * bound).requires_grad_()]

    def forward(inputs):
        h = inputs.expand(K, -1, -1)
        for i in range(0, len(params), 2):
            h = torch.einsum("kbd,kdc->kbc", h, params[i]) + params[i + 1][:, None, :]
            if i + 2 < len(params):
                h = torch.relu(h)
        return h

    optimizer = torch.optim.Adam(params, lr=LR)
    order = generator(seed)
    for _ in range(EPOCHS):
        for batch in torch.randperm(n, generator=order).split(BATCH):
            loss = F.cross_entropy(forward(x[batch]).reshape(-1, n_random),
                                   labels[:, batch].reshape(-1)) * K
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        return (forward(x).argmax(-1) == labels).double().mean(-1)


def main() -> None:
    import pandas as pd

    from memlib.studies import preset_config, rlp
    from memlib.studies.rlp.method import label_draws
    from memlib.studies.rlp.runs import DRAW_STRIDE

    config = dataclasses.replace(preset_config("rlp", "small"), seeds=SEEDS)
    rows = []
    for seed in SEEDS:
        s = rlp.spec(config, seed=seed)
        if not rlp.cached_run.has(s):
            raise SystemExit(f"the small preset's default run of seed {seed} is not cached: "
                             "run notebook 01 on these seeds first")
        result = rlp.cached_run(s)
        features = result["features"]
        last = max(features)
        labels = label_draws(result["feature_index"], result["n_random"],
                             s.label_seed + DRAW_STRIDE * seed, K, result["num_samples"])
        for layer in result["layers"]:
            for hidden in HIDDEN:
                acc = {when: float(probe_accuracy(features[epoch][layer], labels,
                                                  result["n_random"], hidden, seed).mean())
                       for when, epoch in (("trained", last), ("frozen", 0))}
                rows.append({"seed": seed, "layer": layer, "hidden": hidden, **acc,
                             "excess": acc["trained"] - acc["frozen"]})
    table = pd.DataFrame(rows)
    table.round(4).to_csv(OUT, index=False)
    summary = table.groupby(["hidden", "layer"])[["trained", "frozen", "excess"]].agg(
        ["mean", "std"])
    print((100 * summary).round(1).to_string())


if __name__ == "__main__":
    main()
