"""A 3-channel dataset (CIFAR-10, tiny files in its real format) through every study that
accepts it, standardized and trained to a declared fit; the studies that cannot take it
refuse it with one line."""

import pytest
import torch
from test_data import write_cifar
from test_full_presets import balance_labels

from memlib import config as mconfig
from memlib import data, paths
from memlib.claims import evaluate
from memlib.config import ConfigError
from memlib.pipeline import read_params


@pytest.fixture
def cifar_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    monkeypatch.setenv("MEMLIB_DATA", str(root))
    torch.set_num_threads(1)
    data.clear_cache()
    write_cifar(root, "cifar10", n_train=80, n_test=30)  # torchvision's own root layout
    balance_labels(root / "cifar-10-batches-py", 10)
    yield root
    data.clear_cache()


def small_config(module, stem: str, overrides: dict):
    params = read_params(paths.repo_root() / "params" / "small" / f"{stem}.yaml")
    return mconfig.build(module.Config, {**params, **overrides})


FIT_AT_ONCE = {"fit_train_acc": 0.01, "fit_flipped_acc": 0.01, "epochs_after_fit": 1}


def test_study1_on_cifar10(cifar_root):
    from memlib.studies import rlp

    config = small_config(rlp, "01_random_label_heads", {
        "dataset": "cifar10", "train_samples": 40, "test_samples": 20, "validation_samples": 20,
        "widths": [16, 16],
        "cnn_channels": [4, 8, 8], "head_project": 4, "epochs": 4, "layer_model_epochs": 3,
        "measure_every": 1, "parallel_runs": 1, "seeds": [0], "fractions": [1.0],
        "long_tail_ratio": 2.0, "lambdas": [10.0], **FIT_AT_ONCE})
    d = rlp.load_data(rlp.spec(config))
    assert d["train"][0].shape[1:] == (3, 32, 32)
    stats = data.standardization("cifar10")
    raw = data.load("cifar10").x[d["index"].cpu()]
    assert torch.allclose(d["train"][0].cpu(), stats.apply(raw))
    results = rlp.run(config)
    fit = results["fit"]
    assert results["dataset"] == "cifar10" and set(fit["model"]) == {"mlp", "smallcnn"}
    assert (fit["fit_epoch"] == 1).all() and (fit["epochs_trained"] == 2).all()
    measured = rlp.measure_claims(results)
    assert measured["regularizers"]["fit_epochs"] == [1] and measured["noise"]["fitted"]
    assert measured["early_rise"]["data"] == "cifar10"
    assert len(evaluate(rlp.CLAIMS, measured)) == len(rlp.CLAIMS)


def test_study3_on_cifar10(cifar_root):
    from memlib.studies import fisher

    config = small_config(fisher, "03_fisher_rank_inflation", {
        "dataset": "cifar10", "n_train": 60, "n_test": 30, "n_scatter": 40,
        "corruptions": [0.0, 0.4], "seeds": [0], "epochs": 6, "mlp_widths": [16, 8],
        "arch_models": [], "direct_checks": 2, "synthetic_n": 30, "top_k": 10,
        "early_epoch": 1, "parallel_runs": 1, **FIT_AT_ONCE})
    results = fisher.run(config)
    summary = results["summary"]
    assert (summary["fit_epoch"] == 1).all() and (summary["epochs_trained"] == 2).all()
    measured = fisher.measure(results, config)
    assert measured["enrichment"]["last_epochs"] == [2]
    assert measured["enrichment"]["data"] == "cifar10"
    assert len(evaluate(fisher.CLAIMS, measured)) == len(fisher.CLAIMS)


def test_lens_on_cifar10(cifar_root):
    from memlib.studies import lens

    sets = ["train_samples=40", "test_samples=20", "validation_samples=20", "widths=[16, 16]",
            "head_project=4",
            "epochs=12", "model=mlp", "layer_models=[mlp]", "measure_every=1", "fit_train_acc=0.01",
            "fit_flipped_acc=0.01", "epochs_after_fit=1", "seeds=[0]"]
    config = lens.Config(setting="small", study1_sets=tuple(sets), datasets=("cifar10",),
                         noise_rates=(0.4,), extra_seeds=(), scatter_samples=20, null_draws=1,
                         parallel_runs=1, measure_every=1)
    results = lens.run(config)
    runs = results["runs"]
    # the lens watches study 1's run as study 1 measures it, every epoch here: the fit is
    # found at epoch 1, and the run ends at the first measured epoch one epoch after it
    assert (runs["fit_epoch"] == 1).all() and (runs["epochs"] == 2).all()
    assert results["curves"]["epoch"].max() == 2
    measured = lens.measure(results)
    assert all(v is None or v["fitted"] for v in measured.values())


def test_studies_without_3_channel_images_refuse_in_one_line():
    from memlib.studies import modarith, probes

    for build in (lambda: mconfig.build(modarith.Config, {"image_dataset": "cifar10"}),
                  lambda: mconfig.build(probes.Config, {"datasets": ["cifar10"]})):
        with pytest.raises(ConfigError) as err:
            build()
        assert "cifar10" in str(err.value) and "\n" not in str(err.value)
