"""memlib.data: label noise, subsets, and loaders over tiny files in the real on-disk formats."""

from __future__ import annotations

import gzip
import itertools
import math
import pickle
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.datasets
from hypothesis import given, settings
from hypothesis import strategies as st

from memlib import data

# --- writers for the real on-disk formats ------------------------------------------------


def write_idx(path: Path, array: np.ndarray) -> None:
    """IDX uint8 file (gzipped if the name ends in .gz), as in the MNIST distributions."""
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    (gzip.open if path.suffix == ".gz" else open)(path, "wb").write(header + array.tobytes())


def write_mnist_like(directory: Path, n_train: int, n_test: int, gz: bool, seed: int = 0):
    """Random 28x28 images and labels 0..9 in `directory`; returns {split: (images, labels)}."""
    rng = np.random.default_rng(seed)
    written = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        for name, array in zip(data._IDX_FILES[split], (images, labels), strict=True):
            write_idx(directory / (name + (".gz" if gz else "")), array)
        written[split] = images, labels
    return written


def write_cifar(root: Path, which: str, n_train: int, n_test: int, seed: int = 0):
    """Python-2-style CIFAR pickles in torchvision's layout under `root`; returns
    {split: (images N x 3 x 32 x 32, labels)} and the class names."""
    rng = np.random.default_rng(seed)
    if which == "cifar10":
        folder, meta = "cifar-10-batches-py", "batches.meta"
        label_key, names_key = "labels", "label_names"
        files = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
        classes = [f"c10_{i}" for i in range(10)]
    else:
        folder, meta = "cifar-100-python", "meta"
        label_key, names_key = "fine_labels", "fine_label_names"
        files = {"train": ["train"], "test": ["test"]}
        classes = [f"c100_{i}" for i in range(100)]
    directory = root / folder
    directory.mkdir(parents=True)
    written = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
        labels = rng.integers(0, len(classes), n).tolist()
        parts = np.array_split(np.arange(n), len(files[split]))
        for file, part in zip(files[split], parts, strict=True):
            batch = {b"data": images[part].reshape(len(part), -1),
                     label_key.encode(): [labels[i] for i in part]}
            (directory / file).write_bytes(pickle.dumps(batch, protocol=2))
        written[split] = images, np.array(labels)
    names = {names_key.encode(): [c.encode() for c in classes]}
    (directory / meta).write_bytes(pickle.dumps(names, protocol=2))
    return written, tuple(classes)


@pytest.fixture(autouse=True)
def fresh_cache():
    data.clear_cache()
    yield
    data.clear_cache()


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    return tmp_path


@pytest.fixture
def no_download(monkeypatch):
    """Any download attempt fails as it would offline (tests never touch the network)."""
    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network in tests")
    for name in ("MNIST", "FashionMNIST", "CIFAR10", "CIFAR100"):
        monkeypatch.setattr(torchvision.datasets, name, offline)


def assert_images(split: data.Split, shape):
    assert split.x.dtype == torch.float32 and split.y.dtype == torch.int64
    assert tuple(split.x.shape) == shape and len(split) == shape[0]
    assert 0 <= split.x.min() and split.x.max() <= 1


# --- symmetric label noise ----------------------------------------------------------------


def test_symmetric_noise_rate_targets_and_mask():
    n, classes, rate = 20_000, 10, 0.3
    labels = torch.randint(0, classes, (n,), generator=torch.Generator().manual_seed(1))
    noisy, flipped = data.symmetric_noise(labels, rate, classes, seed=0)
    assert noisy.dtype == torch.int64 and flipped.dtype == torch.bool
    assert abs(flipped.float().mean().item() - rate) < 4 * math.sqrt(rate * (1 - rate) / n)
    assert (noisy[flipped] != labels[flipped]).all()
    assert torch.equal(noisy[~flipped], labels[~flipped])
    # flips are uniform over the C-1 other classes: offsets 1..C-1 equally often
    offsets = torch.bincount((noisy - labels)[flipped] % classes, minlength=classes)
    k = int(flipped.sum())
    p = 1 / (classes - 1)
    assert offsets[0] == 0
    assert ((offsets[1:] - k * p).abs() < 4 * math.sqrt(k * p * (1 - p))).all()


def test_symmetric_noise_reproducible_and_leaves_global_rng_alone():
    labels = torch.arange(1000) % 7
    state = torch.get_rng_state()
    a = data.symmetric_noise(labels, 0.4, 7, seed=3)
    b = data.symmetric_noise(labels, 0.4, 7, seed=3)
    c = data.symmetric_noise(labels, 0.4, 7, seed=4)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5, float("nan")])
def test_symmetric_noise_rejects_rates_outside_unit_interval(rate):
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        data.symmetric_noise(torch.zeros(5, dtype=torch.long), rate, 10, seed=0)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), classes=st.integers(2, 30),
       rate=st.floats(0, 0.99), seed=st.integers(0, 2**31))
def test_symmetric_noise_properties(n, classes, rate, seed):
    labels = torch.randint(0, classes, (n,), generator=torch.Generator().manual_seed(seed))
    noisy, flipped = data.symmetric_noise(labels, rate, classes, seed)
    assert noisy.shape == labels.shape == flipped.shape
    assert ((noisy >= 0) & (noisy < classes)).all()
    assert torch.equal(noisy != labels, flipped)
    if rate == 0:
        assert not flipped.any()
    again = data.symmetric_noise(labels, rate, classes, seed)
    assert torch.equal(noisy, again[0])


# --- subsets -------------------------------------------------------------------------------


def labels_with_sizes(sizes) -> torch.Tensor:
    labels = torch.cat([torch.full((n,), c) for c, n in enumerate(sizes)])
    return labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))]


def assert_sorted_unique(indices: torch.Tensor, n: int):
    assert indices.dtype == torch.int64
    assert torch.equal(indices, torch.unique(indices))  # unique() sorts
    assert indices.numel() == 0 or (0 <= indices.min() and indices.max() < n)


def test_stratified_subset_fraction_rounds_per_class():
    labels = labels_with_sizes([50, 30, 7, 1])
    idx = data.stratified_subset(labels, fraction=0.5, seed=1)
    assert_sorted_unique(idx, len(labels))
    assert torch.bincount(labels[idx]).tolist() == [25, 15, 4, 1]  # 3.5 rounds up; >= 1
    assert torch.equal(idx, data.stratified_subset(labels, fraction=0.5, seed=1))
    assert not torch.equal(idx, data.stratified_subset(labels, fraction=0.5, seed=2))
    assert len(data.stratified_subset(labels, fraction=1.0)) == len(labels)


@pytest.mark.parametrize("sizes, count, expected", [
    ([50, 30, 20], 10, [5, 3, 2]),
    ([40, 35, 25], 10, [4, 4, 2]),  # quotas 4, 3.5, 2.5: remainder tie goes to the first class
    ([97, 2, 1], 5, [3, 1, 1]),     # tiny classes still get one each
])
def test_stratified_subset_count_largest_remainder(sizes, count, expected):
    labels = labels_with_sizes(sizes)
    idx = data.stratified_subset(labels, count=count)
    assert_sorted_unique(idx, len(labels))
    assert torch.bincount(labels[idx], minlength=len(sizes)).tolist() == expected


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=8), data_=st.data())
def test_stratified_subset_count_properties(sizes, data_):
    labels = labels_with_sizes(sizes)
    count = data_.draw(st.integers(len(sizes), len(labels)))
    idx = data.stratified_subset(labels, count=count, seed=data_.draw(st.integers(0, 99)))
    assert_sorted_unique(idx, len(labels))
    kept = torch.bincount(labels[idx], minlength=len(sizes))
    assert len(idx) == count
    assert (kept >= 1).all() and (kept <= torch.tensor(sizes)).all()
    quota = torch.tensor(sizes) * count / len(labels)
    assert ((kept - quota).abs() < len(sizes) + 1).all()  # proportional, up to the >= 1 fix-up


@pytest.mark.parametrize("kwargs, message", [
    ({}, "exactly one"), ({"fraction": 0.5, "count": 3}, "exactly one"),
    ({"fraction": 0.0}, "fraction"), ({"fraction": 1.2}, "fraction"),
    ({"count": 2}, "count"), ({"count": 1000}, "count"),
])
def test_stratified_subset_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        data.stratified_subset(labels_with_sizes([10, 10, 10]), **kwargs)


def test_long_tail_counts_match_cifar10_lt():
    # the standard CIFAR-10-LT profile (imbalance 100)
    expected = [5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]
    assert data.long_tail_counts(5000, 10, 100) == expected


def test_long_tail_counts_exact_products_do_not_lose_a_sample():
    # in floating point 98 * 49 ** -1.0 is 1.9999999999999998
    assert data.long_tail_counts(98, 2, 49) == [98, 2]


@pytest.mark.parametrize("n_max, classes, ratio", [(500, 100, 100), (600, 10, 10), (37, 7, 3.5),
                                                  (10, 2, 1)])
def test_long_tail_counts_shape(n_max, classes, ratio):
    counts = data.long_tail_counts(n_max, classes, ratio)
    assert len(counts) == classes and counts[0] == n_max
    assert all(a >= b for a, b in itertools.pairwise(counts))
    assert abs(counts[-1] - n_max / ratio) <= 1


def test_long_tail_counts_rejects_bad_ratio():
    with pytest.raises(ValueError, match=">= 1"):
        data.long_tail_counts(100, 10, 0.5)
    with pytest.raises(ValueError, match="empty"):
        data.long_tail_counts(10, 10, 100)


def test_long_tail_subset_keeps_profile_of_smallest_class():
    labels = labels_with_sizes([120, 100, 110, 105, 130])
    idx = data.long_tail_subset(labels, imbalance_ratio=10, seed=0)
    assert_sorted_unique(idx, len(labels))
    assert torch.bincount(labels[idx]).tolist() == data.long_tail_counts(100, 5, 10)
    assert torch.equal(idx, data.long_tail_subset(labels, imbalance_ratio=10, seed=0))
    with pytest.raises(ValueError, match="class 5 has no samples"):
        data.long_tail_subset(labels, 10, num_classes=6)


# --- loaders over tiny files in the real formats --------------------------------------------


def test_fashion_mnist_gz_from_memlib_data(data_dir):
    written = write_mnist_like(data_dir / "fashion_mnist", 12, 5, gz=True)
    for split, n in (("train", 12), ("test", 5)):
        loaded = data.load("fashion_mnist", split, download=False)
        assert_images(loaded, (n, 1, 28, 28))
        images, labels = written[split]
        assert torch.equal(loaded.x[:, 0], torch.from_numpy(images).float() / 255)
        assert loaded.y.tolist() == labels.tolist()
        assert loaded.classes == data.FASHION_MNIST_CLASSES and loaded.num_classes == 10


def test_mnist_uncompressed_torchvision_layout_and_cache(data_dir):
    written = write_mnist_like(data_dir / "mnist" / "MNIST" / "raw", 9, 4, gz=False)
    first = data.load("mnist", "test", download=False)
    assert_images(first, (4, 1, 28, 28))
    assert first.y.tolist() == written["test"][1].tolist()
    assert first.classes == tuple("0123456789")
    assert data.load("mnist", "test", download=False) is first  # cached: repeated loads are free
    data.clear_cache()
    assert data.load("mnist", "test", download=False) is not first


def test_explicit_root_wins(data_dir, tmp_path):
    write_mnist_like(data_dir / "mnist", 3, 2, gz=False, seed=0)
    write_mnist_like(tmp_path / "elsewhere", 7, 2, gz=True, seed=1)
    assert len(data.load("mnist", root=tmp_path / "elsewhere", download=False)) == 7
    assert len(data.load("mnist", download=False)) == 3


@pytest.mark.parametrize("which, classes", [("cifar10", 10), ("cifar100", 100)])
def test_cifar_pickles(data_dir, which, classes):
    written, names = write_cifar(data_dir / which, which, n_train=11, n_test=3)
    for split, n in (("train", 11), ("test", 3)):
        loaded = data.load(which, split, download=False)
        assert_images(loaded, (n, 3, 32, 32))
        images, labels = written[split]
        assert torch.equal(loaded.x, torch.from_numpy(images).float() / 255)
        assert loaded.y.tolist() == labels.tolist()
        assert loaded.classes == names and loaded.num_classes == classes


@pytest.mark.parametrize("name, folder", [("cifar10", None), ("cifar100", None),
                                          ("mnist", "MNIST/raw"),
                                          ("fashion_mnist", "FashionMNIST/raw")])
def test_torchvision_root_layout_under_memlib_data(data_dir, name, folder, no_download):
    """MEMLIB_DATA=ROOT, where torchvision left ROOT/cifar-10-batches-py, ROOT/MNIST/raw..."""
    if folder is None:
        written, _ = write_cifar(data_dir, name, n_train=5, n_test=2)
    else:
        written = write_mnist_like(data_dir / folder, 5, 2, gz=True)
    loaded = data.load(name, "test")
    assert loaded.y.tolist() == written["test"][1].tolist()
    assert "files in" in data.source(name)


def test_channel_statistics_on_tiny_images():
    x = torch.stack([torch.full((2, 2), v) for v in (0.0, 1.0)], 0)[:, None].repeat(1, 3, 1, 1)
    x[:, 2] = 0.5  # a constant channel: std 1, only centred
    stats = data.channel_statistics(x)
    assert stats.mean == pytest.approx((0.5, 0.5, 0.5)) and stats.std == (0.5, 0.5, 1.0)
    z = stats.apply(x)
    assert z[:, :2].mean().item() == pytest.approx(0) and z[:, :2].std(correction=0) == 1
    assert torch.equal(z[:, 2], torch.zeros_like(z[:, 2]))
    assert "[0.5000, 0.5000, 0.5000]" in stats.describe()


def test_standardization_comes_from_the_training_split_only(data_dir):
    written, _ = write_cifar(data_dir / "cifar10", "cifar10", n_train=20, n_test=6)
    train = torch.from_numpy(written["train"][0]).double() / 255
    stats = data.standardization("cifar10")
    assert stats.mean == pytest.approx(train.mean((0, 2, 3)).tolist(), abs=1e-6)
    assert stats.std == pytest.approx(train.std((0, 2, 3), correction=0).tolist(), abs=1e-6)
    test = data.load("cifar10", "test")
    scaled = data.scale_inputs("cifar10", test.x)
    assert torch.allclose(scaled, stats.apply(test.x))  # the test split's own stats unused
    assert data.channel_statistics(test.x) != stats
    train_scaled = data.scale_inputs("cifar10", data.load("cifar10").x).double()
    assert train_scaled.mean((0, 2, 3)).abs().max() < 1e-6
    assert torch.equal(data.scale_inputs("cifar10", test.x, "unit"), test.x)
    with pytest.raises(ValueError, match="choose one of: standardized, unit"):
        data.scale_inputs("cifar10", test.x, "symmetric")


def test_corrupt_idx_file_is_named(data_dir):
    write_mnist_like(data_dir / "mnist", 3, 2, gz=False)
    (data_dir / "mnist" / "train-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x03junk")
    with pytest.raises(ValueError, match="train-labels-idx1-ubyte.*get it again"):
        data.load("mnist", download=False)


@pytest.mark.parametrize("name", ["mnist", "cifar10", "cifar100"])
def test_missing_data_is_one_actionable_line(data_dir, name):
    with pytest.raises(data.MissingDataError) as info:
        data.load(name, download=False)
    message = str(info.value)
    assert "\n" not in message
    assert str(data_dir / name) in message
    assert "download" in message and "MEMLIB_DATA" in message


def test_missing_fashion_mnist_suggests_the_package(tmp_path):
    with pytest.raises(data.MissingDataError, match="apt-get install dataset-fashion-mnist"):
        data.load("fashion_mnist", root=tmp_path, download=False)


def test_failed_download_gives_missing_data_without_traceback(data_dir, no_download):
    with pytest.raises(data.MissingDataError) as info:
        data.load("cifar10")
    assert "download failed: URLError" in str(info.value) and "\n" not in str(info.value)
    assert info.value.__context__ is None and info.value.__cause__ is None


def test_download_then_load(data_dir, monkeypatch):
    def fake_mnist(root, train, download):  # writes what torchvision's MNIST download leaves
        write_mnist_like(Path(root) / "MNIST" / "raw", 6, 2, gz=False)
    monkeypatch.setattr(torchvision.datasets, "MNIST", fake_mnist)
    assert len(data.load("mnist", "test")) == 2


@pytest.mark.skipif(not data.SYSTEM_FASHION_MNIST.is_dir(),
                    reason="dataset-fashion-mnist is not installed")
def test_real_fashion_mnist(data_dir, no_download):
    train = data.load("fashion_mnist")
    assert_images(train, (60_000, 1, 28, 28))
    assert train.num_classes == 10
    assert torch.bincount(train.y).tolist() == [6000] * 10


def test_digits_offline_deterministic_split():
    from sklearn.datasets import load_digits

    train, test = data.load("digits"), data.load("digits", "test")
    assert_images(train, (1437, 1, 8, 8))
    assert_images(test, (360, 1, 8, 8))
    images = torch.from_numpy(load_digits().images).float() / 16
    is_test = torch.arange(len(images)) % 5 == 0  # disjoint by construction: the split is by index
    assert torch.equal(test.x[:, 0], images[is_test])
    assert torch.equal(train.x[:, 0], images[~is_test])
    assert test.x.max() == 1 and train.classes == tuple("0123456789")


def test_unknown_dataset_or_split_names_the_choices():
    with pytest.raises(ValueError) as info:
        data.load("imagenet")
    assert "\n" not in str(info.value) and all(name in str(info.value) for name in data.DATASETS)
    with pytest.raises(ValueError, match="train, test"):
        data.load("digits", "validation")


# --- Split helpers ------------------------------------------------------------------------


def toy_split() -> data.Split:
    x = torch.arange(6, dtype=torch.float32).view(6, 1, 1, 1) / 6
    return data.Split(x, torch.tensor([0, 1, 2, 1, 0, 2]), ("a", "b", "c"))


def test_class_pair_relabels():
    pair = data.class_pair(toy_split(), 2, 0)
    assert pair.classes == ("c", "a")
    assert pair.y.tolist() == [1, 0, 1, 0]  # samples 0, 2, 4, 5: a -> 1, c -> 0
    assert torch.equal(pair.x.flatten(), torch.tensor([0, 2, 4, 5]) / 6)
    with pytest.raises(ValueError, match="two different classes"):
        data.class_pair(toy_split(), 1, 1)


def test_subset_and_indexed_dataset():
    split = toy_split()
    sub = split.subset(torch.tensor([4, 1]))
    assert sub.y.tolist() == [0, 1] and sub.classes == split.classes
    assert len(split.subset(split.y == 2)) == 2
    dataset = data.IndexedDataset(split, transform=lambda x: x + 10)
    x, y, i = dataset[3]
    assert i == 3 and y == 1 and x.item() == pytest.approx(10 + 3 / 6)
    loader = torch.utils.data.DataLoader(data.IndexedDataset(split), batch_size=6, shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    x, y, i = next(iter(loader))
    assert torch.equal(y, split.y[i]) and torch.equal(x, split.x[i])  # index follows the shuffle


def test_to_symmetric_range():
    assert data.to_symmetric_range(torch.tensor([0.0, 0.5, 1.0])).tolist() == [-1.0, 0.0, 1.0]
