"""The unit tests' starting configs. A study's Config defaults are its small run, minutes of
training; a unit test starts from these smaller, shorter settings instead and names what it
changes: `tiny(rlp.Config, epochs=2)`."""

from __future__ import annotations

from typing import Any

from memlib.config import build

TINY: dict[str, dict[str, Any]] = {
    "rlp": dict(
        train_samples=4000, test_samples=2000, validation_samples=500, noise=0.0,
        model="mlp", widths=(128, 128, 128, 128), cnn_channels=(16, 32, 64),
        layer_models=("mlp", "smallcnn", "vit_tiny"), layer_model_epochs=8, head_project=0,
        head_lr=0.01, epochs=20, measure_every=1, parallel_runs=1, batch_size=128,
        schedule="constant", dropouts=(0.1, 0.3, 0.5), weight_decays=(1e-4, 1e-3, 1e-2),
        label_smoothings=(0.1, 0.2, 0.3), lambdas=(1.0, 10.0, 100.0), all_lambdas=None,
        fractions=(0.1, 0.3, 1.0), sampling_experiment=True, noise_rates=(0.2, 0.4),
        noise_lambdas=(1.0, 10.0), seeds=(0, 1, 2), channels_last=False),
    "modarith": dict(seeds=(0,), sweep_seeds=None, parallel_runs=1),
    "fisher": dict(seeds=(0, 1, 2), attribution_seeds=(), epochs=50, epochs_after_fit=None,
                   parallel_runs=1),
    "probes": dict(datasets=("fashion_mnist",), seeds=(0, 1, 2, 3, 4),
                   standin_seeds=(1000, 1001, 1002, 1003, 1004), parallel_runs=1),
    # the lens's seeds are study 1's (and `extra_seeds`): study 1's changed to 0, 1, 2
    "lens": dict(study1_sets=("seeds=[0, 1, 2]",), noise_rates=(0.0, 0.2, 0.4), extra_seeds=(),
                 parallel_runs=1),
}


def tiny(config_class: type, params: dict[str, Any] | None = None, **overrides):
    """`config_class` (a study's Config) from the unit tests' settings, changed by `params`
    and `overrides`, checked and typed as a preset's values are."""
    study = config_class.__module__.split(".")[2]
    return build(config_class, {**TINY[study], **(params or {}), **overrides})
