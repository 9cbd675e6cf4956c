import pytest
import torch

from memlib import models


@pytest.mark.parametrize("name, shape, classes", [
    ("mlp", (1, 8, 8), 10), ("smallcnn", (1, 28, 28), 10), ("wrn", (3, 32, 32), 100),
    ("resnet18", (3, 32, 32), 10), ("vit_tiny", (1, 28, 28), 10),
])
def test_models_expose_named_representations(name, shape, classes):
    kwargs = {"depth": 10, "width": 1} if name == "wrn" else {}
    model = models.build(name, classes, shape, **kwargs)
    logits, feats = models.features(model, torch.randn(2, *shape))
    assert logits.shape == (2, classes)
    assert list(feats) == list(model.probe_layers)
    for value in feats.values():
        assert models.pool(value).shape[0] == 2 and models.pool(value).ndim == 2


def test_taps_are_live_and_removed():
    model = models.MLP(4, (3,), 2)
    x = torch.randn(5, 4)
    with models.taps(model, ["act1"]) as out:
        model(x)
    out["act1"].sum().backward()
    assert model.fc1.weight.grad is not None
    assert not model.act1._forward_hooks


def test_unknown_names_are_clear():
    with pytest.raises(ValueError, match="unknown layer 'nope'.*act1"):
        with models.taps(models.MLP(4, (3,), 2), ["nope"]):
            pass
    with pytest.raises(ValueError, match="choose one of"):
        models.build("transformer9000", 10, (1, 8, 8))
