"""Every params/full preset runs end-to-end on tiny data written in the real on-disk formats.

Each test loads params/full/<stem>.yaml, applies the overrides below, which ONLY shrink
sizes (epochs, seeds, sample counts, sweep lists, widths), and runs the study with the
preset's datasets, models and code paths: CIFAR-100 + WRN/ResNet18 (rlp), MNIST (modarith),
CIFAR-10 + SmallCNN/ResNet18/ViT + CIFAR-10N human labels (fisher), MNIST + Fashion-MNIST
(probes), and study 1's CIFAR-100 + WRN watched by the lens. The datasets are tiny random
images in MEMLIB_DATA (a temporary folder); the cache is a temporary folder too (conftest).
"""

from __future__ import annotations

import dataclasses
import pickle
import time

import numpy as np
import pytest
import torch
from test_data import write_cifar, write_mnist_like
from test_probes import write_tiny_ner

from memlib import config as mconfig
from memlib import data, paths
from memlib.claims import NOT_RUN, evaluate
from memlib.presets import read_params

# --- the overrides: each shrinks a size of the full preset, nothing else ------------------

RLP = {  # CIFAR-100, WRN-16-4 + ResNet18 kept; fewer samples/epochs, one value per sweep,
    # WRN width 4 -> 1, one seed
    "train_samples": 200, "test_samples": 100, "validation_samples": 100, "epochs": 1,
    "layer_model_epochs": 1,
    "batch_size": 100, "wrn_width": 1, "dropouts": [0.1], "weight_decays": [5.0e-4],
    "label_smoothings": [0.1], "lambdas": [10.0], "fractions": [0.5], "noise_rates": [0.2],
    "noise_lambdas": [100.0], "seeds": [0],
    # ratio 100 needs >= 100 samples in every class; 2 keeps the long-tail path on 2 per class
    "long_tail_ratio": 2.0,
}
MODARITH = {  # p = 113 and MNIST kept; narrower nets, few epochs, short sweeps
    "width": 33, "alphas": [0.0, 0.5], "seeds": [0], "epochs": 4, "log_every": 2,
    "partition_fractions": [0.5, 1.0], "spectra_neurons": 8, "order_epochs": 4,
    "order_log_every": 2, "order_optimizers": ["adamw", "sgd"], "order_lrs": [1.0e-3, 1.0],
    "order_weight_decays": [0.1, 0.0], "sweep_widths": [17], "sweep_alphas": [0.5],
    "sweep_activations": ["relu"], "sweep_weight_decays": [0.1], "sweep_epochs": 4,
    "digits_width": 32, "digits_epochs": 4, "image_samples": 100, "image_epochs": 4,
}
FISHER = {  # CIFAR-10 (whole tiny train/test sets, n_train = n_test = 0 as in the preset),
    # SmallCNN, ResNet18 + ViT, CIFAR-10N label sets kept; smaller scatter set, fewer epochs,
    # corruptions and seeds
    "n_scatter": 40, "corruptions": [0.0, 0.4], "seeds": [0], "human_seeds": 1,
    "epochs": 2, "batch_size": 50, "early_epoch": 1, "top_k": 10, "direct_checks": 2,
    "arch_epochs": 2, "synthetic_n": 40,
}
PROBES = {  # MNIST + Fashion-MNIST, authors' pairs, all training images kept (the tiny files);
    # fewer runs, epochs, probe levels, null draws, pairs, stand-ins
    "epochs": 1, "seeds": [0, 1], "standin_seeds": [120, 121], "eval_batch_size": 100,
    "prune_levels": [0.0, 0.5], "noise_log2_levels": [-4, 0], "flip_levels": [0.0, 0.2],
    "null_draws": 1, "null_prune_levels": [0.0, 0.5], "curveball_trades": 2, "ssim_pairs": 5,
    "heatmap_classes": 3, "heatmap_runs": 1, "heatmap_epochs": 1,
    "heatmap_null_draws": 1, "standin_epochs": 1, "standin_train": 300, "standin_test": 100,
    "standin_prune_levels": [0.5], "standin_noise_levels": [1.0], "standin_flip_levels": [0.1],
    "distilbert": True,  # a tiny DistilBERT NER model and CoNLL file, written by the test
}

# --- tiny datasets in the real on-disk formats -------------------------------------------

CIFAR10_TRAIN = 120  # the fisher preset trains on all of it


def balance_labels(directory, classes: int) -> None:
    """Rewrite the label lists of CIFAR pickles written by write_cifar to i % classes, so
    every class is present in any tiny stratified subset."""
    for path in directory.iterdir():
        batch = pickle.loads(path.read_bytes())
        for key in (b"labels", b"fine_labels"):
            if key in batch:
                batch[key] = [i % classes for i in range(len(batch[key]))]
        path.write_bytes(pickle.dumps(batch, protocol=2))


def write_cifar10n(root, n_train: int, seed: int = 0) -> None:
    """CIFAR-10_human.pt: a torch-saved dict of NumPy int arrays, one label per train image."""
    rng = np.random.default_rng(seed)
    keys = ("aggre_label", "random_label1", "random_label2", "random_label3", "worse_label",
            "clean_label")
    (root / "cifar10n").mkdir(parents=True, exist_ok=True)
    torch.save({k: rng.integers(0, 10, n_train) for k in keys},
               root / "cifar10n" / "CIFAR-10_human.pt")


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    root.mkdir()
    monkeypatch.setenv("MEMLIB_DATA", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    data.clear_cache()
    yield root
    data.clear_cache()


def full_config(module, stem: str, overrides: dict):
    params = read_params(paths.repo_root() / "params" / "full" / f"{stem}.yaml")
    unknown = set(overrides) - {f.name for f in dataclasses.fields(module.Config)}
    assert not unknown, f"overrides name keys the Config lacks: {unknown}"
    return mconfig.build(module.Config, {**params, **overrides})


def run_and_claim(module, config, measure):
    start = time.time()
    results = module.run(config)
    table = evaluate(module.CLAIMS, measure(results))
    assert len(table) == len(module.CLAIMS)
    return results, table, time.time() - start


# --- the four studies --------------------------------------------------------------------


def test_rlp_full_preset(data_root):
    from memlib.studies import rlp

    write_cifar(data_root / "cifar100", "cifar100", 400, 150)
    balance_labels(data_root / "cifar100" / "cifar-100-python", 100)
    config = full_config(rlp, "01_random_label_heads", RLP)
    assert config.dataset == "cifar100" and config.model == "wrn"
    assert rlp.train_spec(rlp.spec(config)).augment == "cifar_cutout"  # crop, flip, cutout
    results, table, _ = run_and_claim(rlp, config, rlp.measure_claims)
    assert results["chance"] == pytest.approx(1 / 100)
    assert set(results["layerwise"]["model"]) == {"wrn", "resnet18"}
    resnet, _ = rlp.make_model(rlp.spec(config, model="resnet18"), 100, (3, 32, 32))
    assert resnet.conv1.kernel_size == (3, 3)  # the CIFAR stem on 32 x 32 inputs


# The ImageNet / ViT-B/32 arm: the rlp preset plus its overrides file (`--params`).
RLP_IMAGENET = {  # ViT-B/32 at 2 of its 12 blocks on 32 x 32 crops (one patch), in-process
    # loading, fewer epochs, one value per sweep, 12 of the 24 training images measured
    "vit_depth": 2, "image_size": 32, "workers": 0, "epochs": 1, "layer_model_epochs": 1,
    "batch_size": 12, "measure_samples": 12, "validation_samples": 3, "lambdas": [10000.0],
    "fractions": [0.5], "seeds": [0],
    "long_tail_ratio": 2.0,  # 8 images per class; ratio 100 needs >= 100
}


def imagenet_arm_sets() -> dict:
    """The overrides file of the ImageNet arm, as `memlib run rlp --params` reads it."""
    return read_params(paths.repo_root() / "params" / "full" /
                       "01_random_label_heads.imagenet.yaml")


def test_rlp_full_preset_imagenet_arm(data_root):
    from test_rlp import write_gray_imagefolder

    from memlib.studies import rlp

    write_gray_imagefolder(data_root / "imagenet")  # 3 classes x 8 JPEGs, train and val
    arm = imagenet_arm_sets()
    assert arm["dataset"] == "imagenet" and arm["model"] == "vit_base_patch32_224"
    config = full_config(rlp, "01_random_label_heads", {**arm, **RLP_IMAGENET})
    assert (config.optimizer, config.lr, config.weight_decay, config.schedule,
            config.precision) == ("adamw", 1e-3, 0.1, "warmup_cosine", "bf16")
    assert rlp.train_spec(rlp.spec(config)).augment == "none"  # the loader's own transform
    results, table, _ = run_and_claim(rlp, config, rlp.measure_claims)
    assert results["layers"] == ["blocks.0", "blocks.1"] and results["chance"] == 1 / 3
    assert set(results["layerwise"]["model"]) == {"vit_base_patch32_224"}
    lw = results["layerwise"]
    assert lw[["rlp_acc", "frozen_acc"]].stack().between(0, 1).all()
    model, _ = rlp.make_model(rlp.spec(config), 1000, (3, 224, 224))
    assert model.patch_embed.proj.kernel_size == (32, 32) and model.embed_dim == 768


def test_modarith_full_preset(data_root):
    from memlib.studies import modarith

    write_mnist_like(data_root / "mnist", 200, 50, gz=True)
    config = full_config(modarith, "02_modular_arithmetic_noise", MODARITH)
    assert config.p == 113 and config.image_dataset == "mnist"
    results, table, _ = run_and_claim(modarith, config,
                                      lambda r: modarith.measure(r, config))
    assert "mnist" in set(results["images"]["dataset"]) and not results["image_note"]


def test_fisher_full_preset(data_root):
    from memlib.studies import fisher

    write_cifar(data_root / "cifar10", "cifar10", CIFAR10_TRAIN, 40)
    write_cifar10n(data_root, CIFAR10_TRAIN)
    config = full_config(fisher, "03_fisher_rank_inflation", FISHER)
    assert config.dataset == "cifar10" and config.human_label_sets
    assert config.augment == "cifar_cutout"
    results, table, _ = run_and_claim(fisher, config, lambda r: fisher.measure(r, config))
    summary = results["summary"]
    assert set(summary["model"]) == {"smallcnn", "resnet18", "vit_tiny"}
    assert fisher.build_model(config, "resnet18", 10, (3, 32, 32)).conv1.kernel_size == (3, 3)
    table = torch.load(data_root / "cifar10n" / "CIFAR-10_human.pt", weights_only=False)
    assert fisher.human_labels("worst").tolist() == table["worse_label"].tolist()
    write_cifar10n(data_root, CIFAR10_TRAIN + 1)  # not aligned with the train set
    with pytest.raises(ValueError, match="CIFAR-10 train has"):
        fisher.human_labels("aggre")
    assert set(summary["noise"]) == {"symmetric", *config.human_label_sets}


def test_fisher_full_preset_cifar100_variant(data_root):
    """The variant the preset's header describes: dataset: cifar100, human_label_sets: []."""
    from memlib.studies import fisher

    write_cifar(data_root / "cifar100", "cifar100", 200, 100)
    config = full_config(fisher, "03_fisher_rank_inflation",
                         {**FISHER, "dataset": "cifar100", "human_label_sets": [],
                          "arch_models": []})  # the extra architectures run in the test above
    results, table, _ = run_and_claim(fisher, config, lambda r: fisher.measure(r, config))
    assert set(results["summary"]["model"]) == {"smallcnn"}
    assert (results["summary"]["rank_bound"] >= 99).all()


LENS = {  # study 1's full setting (CIFAR-100, WRN-16-4) shrunk by the same kind of changes as
    # RLP above; two noise rates, one seed, a smaller scatter set, one null draw
    "study1_sets": ["train_samples=200", "test_samples=100", "validation_samples=100",
                    "epochs=2", "batch_size=100", "wrn_width=1", "seeds=[0]"],
    "noise_rates": [0.0, 0.4], "scatter_samples": 100, "null_draws": 1,
}


def test_lens_full_preset(data_root):
    from memlib.studies import lens

    write_cifar(data_root / "cifar100", "cifar100", 400, 150)
    balance_labels(data_root / "cifar100" / "cifar-100-python", 100)
    config = full_config(lens, "05_memorization_lens", LENS)
    study1 = lens.study1_config(config)
    assert (study1.dataset, study1.model, study1.augment) == ("cifar100", "wrn", "cifar_cutout")
    results = lens.run(config)
    table = evaluate(lens.claims_for(config), lens.measure(results))
    assert len(table) == 5 and NOT_RUN not in set(table["verdict"])
    assert len(results["examples"]) == 2 * 100  # every scored example of both runs
    layers = results["layers"]
    assert list(layers["layer"].unique()) == ["block1", "block2", "block3", "pool"]
    convs = layers[layers["layer"] != "pool"]  # pool has no weights of its own to probe
    assert convs[["sign", "null_b"]].notna().all().all()
    assert layers.loc[layers["layer"] == "pool", "sign"].isna().all()


def test_probes_full_preset(data_root):
    from memlib.studies import probes

    write_mnist_like(data_root / "mnist", 300, 100, gz=True, seed=1)
    write_mnist_like(data_root / "fashion_mnist", 300, 100, gz=False, seed=2)
    write_tiny_ner(data_root)  # $MEMLIB_DATA/models/distilbert-NER, conll2003/test.txt
    config = full_config(probes, "04_task_complexity_probes", PROBES)
    assert set(config.datasets) == {"mnist", "fashion_mnist"}
    results, table, _ = run_and_claim(probes, config, probes.measure)
    assert set(results["pairs"]["dataset"]) == {"mnist", "fashion_mnist"}
    assert results["distilbert"] is not None, results["distilbert_status"]
    assert "6 CoNLL-2003 test sentences" in results["distilbert_status"]
    assert table.set_index("id").loc["transformer_layers_distilbert", "verdict"] != NOT_RUN
    # the text arm of the modality row reads DistilBERT's six matrices (its image arm needs
    # the 45 pairs of ten classes, which this shrunk run does not train)
    assert probes.measure(results)[probes.MODALITIES]["text"].n == 6


@pytest.mark.parametrize("packages", ["missing", "installed"])
def test_distilbert_offline_is_one_line(data_root, monkeypatch, packages):
    """distilbert: true offline without local files gives one status line, whether datasets
    is missing or installed (faked: then the hub itself refuses, offline)."""
    import sys
    import types

    from memlib.studies import probes

    if packages == "installed":
        metrics = types.ModuleType("seqeval.metrics")
        metrics.f1_score = lambda *args: 0.0
        for name, module in (("datasets", types.ModuleType("datasets")),
                             ("seqeval", types.ModuleType("seqeval")),
                             ("seqeval.metrics", metrics)):
            monkeypatch.setitem(sys.modules, name, module)
    config = full_config(probes, "04_task_complexity_probes", {**PROBES, "distilbert": True})
    table, status = probes.distilbert_case_study(config)
    assert table is None and "\n" not in status and "not run" in status
