"""One training run: its data, model, heads and training (`train_run`), the frozen-initialisation
baseline, the registered computations that cache both, and the rows a run contributes to the
tables."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Sequence

import pandas as pd
import torch
from torch import nn

from memlib import data as datasets
from memlib import distributed, imagenet
from memlib.models import build, build_external, external, load_checkpoint
from memlib.runs import computation
from memlib.seed import seed_everything
from memlib.studies.rlp.config import FOLDER_DATASETS, ProbeSpec, RunSpec
from memlib.studies.rlp.method import (
    RLPHeads,
    class_variance_ratio,
    eval_loader,
    feature_dims,
    head_labels,
    label_draws,
    measure,
    per_class_accuracy,
    pooled_features,
    predictions,
    probe_accuracies,
    random_labels,
    rlp_step,
)
from memlib.train import (
    FitCriterion,
    TensorBatches,
    TrainSpec,
    dataset_batches,
    fit_tracker,
    make_optimizers,
    resolve_device,
    train,
)

__all__ = [
    "make_model", "validation_indices", "train_indices", "load_data", "train_spec", "make_heads",
    "train_run", "fit_criterion", "final_collapse", "layer_collapse", "frozen_baseline",
    "cached_run", "cached_frozen", "DRAW_STRIDE", "RETRAIN_OFFSET", "retraining_labels",
    "posthoc_probes", "cached_probes", "probe_means", "probe_curve", "final_row", "layer_rows"
]


def make_model(s: RunSpec, num_classes: int, in_shape) -> tuple[nn.Module, tuple[str, ...]]:
    """The model and its probed layers (SmallCNN's `pool` is GAP of block3: not probed twice;
    `s.layers` where given), with the checkpoint's weights where the run names one."""
    if external(s.model):  # a timm or torchvision model: its natural stages
        model = build_external(s.model, num_classes, in_shape)
        return _started(s, model, s.layers or model.probe_layers)
    kwargs = {"mlp": dict(widths=s.widths, dropout=s.dropout),
              "smallcnn": dict(channels=s.cnn_channels, dropout=s.dropout),
              "wrn": dict(depth=s.wrn_depth, width=s.wrn_width, dropout=s.dropout)}
    if s.model.startswith("vit"):
        depth = {} if s.vit_depth is None else {"depth": s.vit_depth}
        kwargs[s.model] = dict(drop_rate=s.dropout, proj_drop_rate=s.dropout, **depth)
    elif s.model not in kwargs and s.dropout > 0:
        raise ValueError(f"dropout is not available for {s.model!r}; use mlp, smallcnn, wrn "
                         "or a vit")
    extra = kwargs.get(s.model, {})
    if s.model == "resnet18":  # CIFAR-sized inputs get the CIFAR stem (3x3, no max-pool)
        extra = dict(cifar_stem=in_shape[-1] <= 32)
    model = build(s.model, num_classes, in_shape, **extra)
    layers = tuple(n for n in model.probe_layers if not (s.model == "smallcnn" and n == "pool"))
    return _started(s, model, s.layers or layers)


def _started(s: RunSpec, model: nn.Module, layers) -> tuple[nn.Module, tuple[str, ...]]:
    if s.checkpoint is not None:
        load_checkpoint(model, s.checkpoint[0])
    return model, tuple(layers)


def _splits(s: RunSpec):
    """(train, test, train labels, test labels, number of classes): in-memory Splits, or
    image-folder datasets whose images stay on disk."""
    if s.dataset in FOLDER_DATASETS:
        load = imagenet.imagenet if s.dataset == "imagenet" else imagenet.imagenet_lt
        full = load("train", transform_fn=imagenet.transform(True, s.image_size))
        test = load("val" if s.dataset == "imagenet" else "test",
                    transform_fn=imagenet.transform(False, s.image_size))
        return (full, test, torch.tensor(full.targets), torch.tensor(test.targets),
                len(full.classes))
    full, test = datasets.load(s.dataset, "train"), datasets.load(s.dataset, "test")
    return full, test, full.y, test.y, full.num_classes


def validation_indices(s: RunSpec, labels: torch.Tensor) -> torch.Tensor:
    """Original indices of the validation samples: a class-stratified subset of the train
    split, fixed by the data seed, that no run of the study trains on."""
    return datasets.stratified_subset(labels, count=s.validation_samples, seed=s.data_seed + 5)


def train_indices(s: RunSpec, labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Original indices of the run's training samples: the train split without the validation
    samples, then stratified subset, fraction, long tail."""
    idx = torch.arange(len(labels))
    idx = idx[~torch.isin(idx, validation_indices(s, labels))]
    among = (f"training samples of {s.dataset} left beside the {s.validation_samples} "
             "validation samples")
    subset = datasets.sized_subset(labels[idx], s.train_samples, s.data_seed, "train_samples",
                                   among)
    if subset is not None:
        idx = idx[subset]
    if s.fraction < 1:
        idx = idx[datasets.stratified_subset(labels[idx], s.fraction, seed=s.data_seed + 1)]
    if s.long_tail_ratio > 1:
        idx = idx[datasets.long_tail_subset(labels[idx], s.long_tail_ratio, s.data_seed + 2,
                                            num_classes)]
    return idx


def load_data(s: RunSpec) -> dict:
    """Train subset (its original indices, random labels, noisy labels) and test set.

    Labels are tensors by subset position. The images come as data for `train` ("train":
    (x, y) tensors, or a shuffled DataLoader with augmentation) and for `measure` and
    friends ("train_eval", "clean_eval" (clean labels), "validation" (clean labels), "test",
    "features" (every training sample on every rank): tensors, or eval-transform loaders whose
    idx are positions).
    """
    full, test, labels, test_labels, num_classes = _splits(s)
    idx = train_indices(s, labels, num_classes)
    clean_y = labels[idx]
    y = clean_y
    if s.labels == "random":
        y = retraining_labels(s, len(labels), num_classes)[idx]
    elif s.noise > 0:
        y, _ = datasets.symmetric_noise(clean_y, s.noise, num_classes, seed=1000 + s.seed)
    n_random = s.n_random or num_classes
    test_idx = datasets.sized_subset(test_labels, s.test_samples, s.data_seed, "test_samples",
                                     f"test samples of {s.dataset}")
    if test_idx is None:
        test_idx = torch.arange(len(test_labels))
    measured = None  # positions whose train and RLP accuracy are measured; None: all
    if s.measure_samples is not None and s.measure_samples < len(idx):
        measured = datasets.stratified_subset(clean_y, count=s.measure_samples,
                                              seed=s.data_seed + 3)
    device = resolve_device(s.device)
    # one column of random labels per head; "random" is the first head's (a single head's)
    randoms = head_labels(len(labels), n_random, s.label_seed, s.heads)[idx]
    labels_by_position = {"y": y, "clean_y": clean_y, "index": idx, "randoms": randoms,
                          "random": randoms[:, 0]}
    d = {**{k: v.to(device) for k, v in labels_by_position.items()}, "device": device,
         "num_classes": num_classes, "n_random": n_random, "measured": measured,
         "num_samples": len(labels),
         "validation": _validation(s, full, validation_indices(s, labels), device)}
    if s.dataset in FOLDER_DATASETS:
        return {**d, **_folder_sources(s, full, test, idx, y, test_idx, measured)}
    x = datasets.scale_inputs(s.dataset, full.x[idx], s.inputs).to(device)
    x_test = datasets.scale_inputs(s.dataset, test.x[test_idx], s.inputs).to(device)
    pick = (lambda t: (x, t)) if measured is None else (
        lambda t: (x[measured.to(device)], t[measured.to(device)], measured.to(device)))
    return {**d, "train": (x, d["y"]), "train_eval": pick(d["y"]),
            "clean_eval": pick(d["clean_y"]), "features": (x, d["y"]),
            "test": (x_test, test.y[test_idx].to(device)), "example": x[:2],
            "test_curve": _curve_subset(s, x_test, test.y[test_idx].to(device))}


RETRAIN_OFFSET = 99_991  # the random training labels' seed after the run's probe seed (a prime)


def retraining_labels(s: RunSpec, num_samples: int, num_classes: int) -> torch.Tensor:
    """The training labels of a run trained from scratch on random labels, per sample index
    of the full dataset: uniform over the dataset's classes, hence independent of the true
    class (label noise at rate 1 would not do: symmetric noise flips every label to a
    *different* class, which still says what the class is not, and refuses that rate).
    Drawn from a stream of their own, apart from the concurrent heads' labels (`label_seed`)
    and the post-hoc probes' draws (`label_seed + DRAW_STRIDE * seed + j * PROBE_SEED_STRIDE`),
    so the probes read what the network memorized, not the labels it was trained on; a new
    draw per replicate seed."""
    return random_labels(num_samples, num_classes,
                         s.label_seed + DRAW_STRIDE * s.seed + RETRAIN_OFFSET)


def _curve_subset(s: RunSpec, x: torch.Tensor, y: torch.Tensor) -> tuple:
    """The test samples of the epochs before the last: a class-stratified subset of
    `curve_test_samples` (None: all). Curves only need the train-test divergence, while a
    pass over the 10,000 Fashion-MNIST test images costs about ten training epochs of the
    small run; the last epoch, which every test-accuracy row reads, uses the whole set."""
    if s.curve_test_samples is None or s.curve_test_samples >= len(y):
        return x, y
    pick = datasets.stratified_subset(y.cpu(), count=s.curve_test_samples,
                                      seed=s.data_seed + 4).to(x.device)
    return x[pick], y[pick]


def _validation(s: RunSpec, full, held: torch.Tensor, device: torch.device):
    """The validation samples with their clean labels: tensors, or an eval-transform loader
    for an image folder."""
    if s.dataset in FOLDER_DATASETS:
        dataset = imagenet.select(full, held, None, imagenet.transform(False, s.image_size))
        return eval_loader(dataset, s.batch_size, s.workers)
    # scaled as the training and test samples are: unscaled validation images made "best λ"
    # a choice on inputs the network never saw
    x = datasets.scale_inputs(s.dataset, full.x[held], s.inputs)
    return x.to(device), full.y[held].to(device)


def _folder_sources(s: RunSpec, full, test, idx, y, test_idx, measured) -> dict:
    """load_data's image data for an image folder: each sample is read from disk per batch."""
    from torch.utils.data import Subset

    plain = imagenet.transform(False, s.image_size)
    noisy = imagenet.select(full, idx, y, plain)
    clean = imagenet.select(full, idx, None, plain)
    if measured is not None:  # torch's Subset keeps the dataset's own (position) index
        noisy, clean = Subset(noisy, measured.tolist()), Subset(clean, measured.tolist())

    def loader(dataset, shard=True):
        return eval_loader(dataset, s.batch_size, s.workers, shard)

    test_loader = loader(imagenet.select(test, test_idx, None, plain))
    return {"train": dataset_batches(imagenet.select(full, idx, y), s.batch_size, seed=s.seed,
                                     workers=s.workers),
            "train_eval": loader(noisy), "clean_eval": loader(clean),
            "features": loader(imagenet.select(full, idx, y, plain), shard=False),
            "test": test_loader, "test_curve": test_loader,
            "example": torch.stack([noisy[i][0] for i in range(min(2, len(noisy)))])}


def train_spec(s: RunSpec, heads: bool = False) -> TrainSpec:
    """The run's TrainSpec; for the RLP heads: their own LR and no weight decay."""
    lr = s.head_lr if heads and s.head_lr is not None else s.lr
    weight_decay = 0.0 if heads else s.weight_decay
    return TrainSpec(epochs=s.epochs, batch_size=s.batch_size, optimizer=s.optimizer, lr=lr,
                     momentum=s.momentum,
                     weight_decay=weight_decay,
                     schedule=s.schedule, warmup_epochs=s.warmup_epochs,
                     label_smoothing=s.label_smoothing, seed=s.seed,
                     precision=s.precision, channels_last=s.channels_last,
                     fused=s.fused_optimizer,
                     augment=s.augment if s.dataset not in FOLDER_DATASETS else "none")


def make_heads(s: RunSpec, model: nn.Module, layers: Sequence[str], d: dict) -> RLPHeads:
    """The run's heads, on its device; the control heads' projections depend only on the
    label seed, so trained and frozen-init runs read their layers through the same ones."""
    dims = feature_dims(model, layers, d["example"].to(d["device"]))
    return RLPHeads(dims, d["n_random"], s.head_hidden, s.head_project,
                    seed=s.label_seed, k=s.heads).to(d["device"])


def train_run(s: RunSpec, observe: Callable | None = None) -> dict:
    """Train model + RLP heads; history has train/test accuracy and rlp_<layer> per epoch.

    `observe(model, heads, d, memo)`, if given, returns more end-of-epoch callbacks (e.g.
    memlib.studies.lens's per-example tracking; they keep their running state in the dict `memo`,
    which is checkpointed with the model). The result then also holds "model", "heads",
    "data" (load_data's dict) and "memo" for the caller to measure. Observers that only
    evaluate (eval mode, no random draws) leave the training itself unchanged.
    """
    d = load_data(s)
    seed_everything(s.seed)
    model, layers = make_model(s, d["num_classes"], tuple(d["example"].shape[1:]))
    model.to(d["device"])
    heads = make_heads(s, model, layers, d)
    reg_layers = layers[-1:] if s.regularize == "last" else layers
    ts = train_spec(s)
    optimizers = (make_optimizers(model.parameters(), ts)
                  + make_optimizers(heads.parameters(), train_spec(s, heads=True)))

    # the training samples' predictions give the fit (noisy, clean and flipped labels) and
    # every head's accuracy in one forward pass, at the measured epochs only: measuring
    # every epoch would cost as much as training
    flipped = d["y"] != d["clean_y"]
    targets = {"clean": d["clean_y"], "flipped": torch.where(flipped, d["y"], -1)}
    latest: dict = {}
    # measurements run at the training's precision: in fp32 a bf16 run's evaluation passes
    # would take as long as its training steps on a GPU
    precision = (torch.autocast(d["device"].type, dtype=torch.bfloat16)
                 if s.precision == "bf16" else contextlib.nullcontext())

    def measured(epoch: int) -> bool:
        return epoch % s.measure_every == 0 or epoch == s.epochs

    def train_scores(epoch: int) -> dict:
        if latest.get("epoch") != epoch:
            latest.clear()
            with precision:
                scores = measure(model, heads, d["train_eval"], d["randoms"], labels=targets)
            latest.update(epoch=epoch, **scores)
        return latest

    def fit_scores(state) -> tuple[float, float | None] | None:
        if not measured(state.epoch):
            return None
        scores = train_scores(state.epoch)
        return scores["acc"], scores["acc_flipped"] if flipped.any() else None

    # in memory and on one process, the last epoch's test row and the final predictions
    # come from one pass over the test set (the whole split: the costliest measurement)
    one_pass = isinstance(d["test"], tuple) and not distributed.active()
    final: dict = {}

    def record(state) -> None:
        if not measured(state.epoch) and not state.stop:
            return
        last = state.epoch == s.epochs or state.stop
        with precision:
            if last and one_pass:
                final["predicted"], test = predictions(model, d["test"])
            else:
                test = measure(model, None, d["test"] if last else d["test_curve"])
            validation = measure(model, None, d["validation"])
        state.row.update(test_acc=test["acc"], test_loss=test["loss"])
        scores = dict(train_scores(state.epoch))
        state.row["train_acc"] = scores["acc"]
        state.row["clean_train_acc"] = scores["acc_clean"]
        # the eval-mode cross-entropy on the training labels: what the standard regularizers
        # act on (a network they restrain fits its labels less confidently)
        state.row["train_ce"] = scores["loss"]
        state.row.update({metric: scores[metric] for metric, _, _ in heads.probes()})
        state.row.update({"pen" + metric.removeprefix("rlp"): scores[
            "pen" + metric.removeprefix("rlp")] for metric, _, _ in heads.probes()})
        state.row["val_acc"] = validation["acc"]
        if s.feature_grid > 0:
            store_features(state.epoch, last)

    def store_features(epoch: int, last: bool) -> None:
        """The measured training samples' pooled features, float16 on the CPU, kept in the
        checkpointed memo: every probed layer before training (the frozen-initialisation
        network) and at the last epoch, the deepest layer alone in between (the time
        course reads it)."""
        if not (epoch == 0 or last or s.feature_curve):
            return
        wanted = layers if epoch == 0 or last else layers[-1:]
        with precision:
            feats = pooled_features(model, d["clean_eval"], wanted, grid=s.feature_grid)
        memo.setdefault("features", {})[epoch] = {n: f.half().cpu() for n, f in feats.items()}

    memo: dict = {}
    fit = fit_tracker(fit_criterion(s), fit_scores, memo)
    extra = list(observe(model, heads, d, memo)) if observe is not None else []
    history = train(model, d["train"], ts,
                    step=rlp_step(heads, d["randoms"], s.lam, reg_layers, s.label_smoothing),
                    optimizers=optimizers, modules={"heads": heads},
                    callbacks=[fit, record, *extra], memo=memo, desc=f"{s.model} λ={s.lam:g}")
    epochs_trained = int(history["epoch"].iloc[-1])
    history = history[history["train_acc"].notna()].reset_index(drop=True)
    # in memory: the final test predictions, stored (int16) for any subset's accuracy
    predicted = final.get("predicted")
    if predicted is None and isinstance(d["test"], tuple):
        predicted = predictions(model, d["test"])[0]
    out = {"history": history, "layers": list(layers), "n_random": d["n_random"],
           "fit_epoch": memo["fit_epoch"], "epochs_trained": epochs_trained,
           "noisy_fit": train_scores(epochs_trained)["acc_flipped"] if flipped.any() else None,
           "collapse": final_collapse(model, layers, d),
           "class_acc": _class_accuracy(model, d, predicted),
           "class_counts": torch.bincount(d["y"].cpu(), minlength=d["num_classes"]).tolist()}
    if predicted is not None:
        out.update(test_pred=predicted.to(torch.int16).cpu(),
                   test_y=d["test"][1].to(torch.int16).cpu())
    if s.feature_grid > 0:
        positions = d["measured"]
        index = d["index"] if positions is None else d["index"][positions.to(d["device"])]
        out.update(features=memo["features"], feature_index=index.cpu(),
                   num_samples=d["num_samples"])
    if observe is not None:
        out.update(model=model, heads=heads, data=d, memo=memo)
    return out


def _class_accuracy(model: nn.Module, d: dict, predicted: torch.Tensor | None) -> list[float]:
    """Each class's test accuracy (0 for a class without samples); in memory from the
    stored predictions (one pass over the test set instead of two)."""
    if predicted is None:
        return per_class_accuracy(model, d["test"], d["num_classes"])
    y = d["test"][1]
    hits = torch.bincount(y[predicted == y], minlength=d["num_classes"])
    counts = torch.bincount(y, minlength=d["num_classes"]).clamp(min=1)
    return (hits.double() / counts).tolist()


def fit_criterion(s: RunSpec) -> FitCriterion:
    return FitCriterion(s.fit_train_acc, s.fit_flipped_acc, s.epochs_after_fit)


def final_collapse(model: nn.Module, layers: Sequence[str], d: dict) -> dict | None:
    """Each layer's within- to between-class variance ratio (clean labels) on the measured
    training samples; None for image folders, whose features are not held in memory."""
    if not isinstance(d["clean_eval"], tuple):
        return None
    return layer_collapse(model, layers, d["clean_eval"][:2])


def layer_collapse(model: nn.Module, layers: Sequence[str], data: tuple) -> dict[str, float]:
    feats = pooled_features(model, data, layers)
    return {n: class_variance_ratio(feats[n].cpu(), data[1].cpu()) for n in layers}


def frozen_baseline(s: RunSpec) -> dict:
    """Per-epoch RLP accuracy (columns rlp_<layer>: the mean over the layer's K heads) of
    heads with the same K random-label draws, trained with the same optimizer, epochs and
    batch size on the untrained extractor's eval-mode features: what a head memorizes by
    itself, the control of every head reading."""
    d = load_data(s)
    seed_everything(s.seed)
    model, layers = make_model(s, d["num_classes"], tuple(d["example"].shape[1:]))
    model.to(d["device"])
    # in memory: all layers in one pass; from disk: one pass per layer, so that only one
    # layer's features (samples x width) are held at a time
    groups = [layers] if isinstance(d["features"], tuple) else [(n,) for n in layers]
    # the features are fixed: bf16 and channels_last would gain nothing for linear heads
    head_spec = dataclasses.replace(train_spec(s, heads=True), label_smoothing=0.0,
                                    precision="fp32", channels_last=False, augment="none")
    heads = make_heads(s, model, layers, d)
    history = pd.DataFrame({"epoch": range(s.epochs + 1)})
    for group in groups:
        feats = pooled_features(model, d["features"], group)
        for metric, layer, head in heads.probes():
            if layer not in group:
                continue
            seed_everything(s.seed)
            h = train(head, TensorBatches(feats[layer], d["randoms"], s.batch_size, s.seed),
                      head_spec, step=_heads_step,
                      callbacks=[_heads_accuracy(head, feats[layer], d["randoms"])])
            history[metric] = h["random_acc"].to_numpy()
    collapse = (layer_collapse(model, layers, d["clean_eval"][:2])
                if isinstance(d["clean_eval"], tuple) else None)
    return {"history": history, "collapse": collapse}


def _heads_step(heads: nn.Module, batch) -> torch.Tensor:
    """A head set's random-label loss on fixed features: the sum of its heads' mean
    cross-entropies, as the online heads learn (`rlp_losses`)."""
    x, r, _ = batch
    return r.shape[1] * nn.functional.cross_entropy(heads(x).flatten(0, 1), r.flatten())


def _heads_accuracy(heads: nn.Module, x: torch.Tensor, r: torch.Tensor):
    """A callback recording the head set's mean accuracy on its random labels (eval mode)."""
    @torch.no_grad()
    def record(state) -> None:
        was_training = heads.training
        heads.eval()
        state.row["random_acc"] = (heads(x).argmax(-1) == r).double().mean().item()
        heads.train(was_training)
    return record


@computation("rlp_run", 1)
def cached_run(s: RunSpec) -> dict:
    return train_run(s)


@computation("rlp_frozen", 1)
def cached_frozen(s: RunSpec) -> dict:
    return frozen_baseline(s)


DRAW_STRIDE = 100_003  # between the probes' label seeds of successive run seeds (a prime)


def posthoc_probes(result: dict, p: ProbeSpec) -> dict:
    """The post-hoc probes of a run's stored features: "frozen", per layer the k probes'
    accuracies on the frozen-initialisation features (epoch 0); "trained", per stored epoch
    > 0 the same for each layer stored then. Every probe set of a run reads the same k
    random-label draws, which depend on the run's label seed and seed (so replicates draw
    afresh, and trained, frozen and regularized runs of a seed are paired)."""
    features = result["features"]
    labels = label_draws(result["feature_index"], result["n_random"],
                         p.run.label_seed + DRAW_STRIDE * p.run.seed, p.probes,
                         result["num_samples"])
    settings = dict(n_random=result["n_random"], epochs=p.epochs, lr=p.lr,
                    batch_size=p.batch_size, seed=p.run.seed)
    found = probe_accuracies(dict(sorted(features.items())), labels, **settings)
    return {"layers": result["layers"], "chance": 1 / result["n_random"],
            "frozen": found[0],
            "trained": {epoch: found[epoch] for epoch in found if epoch > 0}}


def _probe_key(p: ProbeSpec) -> dict:
    """The probes' key: the run's own key (what trained the features) and the probes'
    settings."""
    settings = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name != "run"}
    return {"run": cached_run.key(p.run), **settings}


@computation("rlp_probes", 1, spec=_probe_key)
def cached_probes(p: ProbeSpec) -> dict:
    return posthoc_probes(cached_run(p.run), p)


def probe_means(probes: dict | None) -> dict[str, float]:
    """Each layer's mean probe accuracy at the run's last stored epoch ("probe_<layer>") and
    on the frozen-initialisation features ("probe_frozen_<layer>"); nothing without probes."""
    if probes is None:
        return {}
    last = probes["trained"][max(probes["trained"])]
    out = {f"probe_{n}": sum(v) / len(v) for n, v in last.items()}
    out.update({f"probe_frozen_{n}": sum(v) / len(v) for n, v in probes["frozen"].items()})
    return out


def probe_curve(probes: dict, layer: str) -> pd.DataFrame:
    """One row per (stored epoch, probe) of `layer`: the probe's accuracy on the trained
    features ("probe_acc"), on the frozen-initialisation features ("frozen_acc") and their
    difference ("excess"), epoch 0 included (excess 0 by construction)."""
    frozen = probes["frozen"][layer]
    epochs = {0: frozen, **{e: layer_accs[layer] for e, layer_accs in probes["trained"].items()
                            if layer in layer_accs}}
    return pd.DataFrame([{"epoch": e, "probe": j, "probe_acc": a, "frozen_acc": f,
                          "excess": a - f}
                         for e, accs in sorted(epochs.items())
                         for j, (a, f) in enumerate(zip(accs, frozen, strict=True))])


def final_row(result: dict, probes: dict | None = None, **labels) -> dict:
    last = result["history"].iloc[-1]
    row = {**labels, "train_acc": last["train_acc"], "val_acc": last["val_acc"],
           "test_acc": last["test_acc"], "fit_epoch": result["fit_epoch"]}
    row.update({f"rlp_{n}": last[f"rlp_{n}"] for n in result["layers"]})
    # the heads' penalty and the training cross-entropy: the regularizers' manipulation
    # checks (absent from runs assembled before they were recorded)
    row.update({c: last[c] for c in (*(f"pen_{n}" for n in result["layers"]), "train_ce")
                if c in last})
    return {**row, **probe_means(probes)}


def layer_rows(result: dict, probes: dict | None = None, **labels) -> list[dict]:
    last = result["history"].iloc[-1]
    collapse = result.get("collapse") or {}
    means = probe_means(probes)
    return [{**labels, "layer": n, "depth": i + 1, "rlp_acc": last[f"rlp_{n}"],
             "train_acc": last["train_acc"], "test_acc": last["test_acc"],
             "proj_acc": last.get(f"rlpproj_{n}", math.nan),
             "collapse": collapse.get(n, math.nan),
             "probe_acc": means.get(f"probe_{n}", math.nan),
             "probe_frozen_acc": means.get(f"probe_frozen_{n}", math.nan)}
            for i, n in enumerate(result["layers"])]

