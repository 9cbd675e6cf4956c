"""Full-scale data paths on tiny files written in the real on-disk formats."""

import numpy as np
import pytest
import torch
from PIL import Image

from memlib import augment, imagenet
from memlib.data import MissingDataError, cifar10n_labels
from memlib.train import TensorBatches


def write_imagefolder(root, classes=3, per_class=4):
    for split in ("train", "val"):
        for c in range(classes):
            folder = root / split / f"n0000{c}"
            folder.mkdir(parents=True)
            for i in range(per_class):
                pixels = np.full((40, 48, 3), 60 * c + i, dtype=np.uint8)
                Image.fromarray(pixels).save(folder / f"img{i}.JPEG", format="JPEG")


def test_imagenet_folder_fraction_and_lt(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    write_imagefolder(tmp_path / "imagenet")
    train = imagenet.imagenet("train")
    assert len(train) == 12 and train.classes == ["n00000", "n00001", "n00002"]
    x, y, i = train[5]
    assert x.shape == (3, 224, 224) and y == 1 and i == 5
    half = imagenet.imagenet("train", fraction=0.5)
    assert sorted(half.targets) == [0, 0, 1, 1, 2, 2]
    (tmp_path / "imagenet_lt").mkdir()
    (tmp_path / "imagenet_lt" / "ImageNet_LT_train.txt").write_text(
        "train/n00000/img0.JPEG 0\ntrain/n00000/img1.JPEG 0\ntrain/n00002/img3.JPEG 2\n")
    lt = imagenet.imagenet_lt("train")
    assert lt.targets == [0, 0, 2] and lt[2][0].shape == (3, 224, 224)


def test_missing_imagenet_and_cifar10n_are_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    for load in (lambda: imagenet.imagenet("val"), lambda: imagenet.imagenet_lt("train"),
                 lambda: cifar10n_labels()):
        with pytest.raises(MissingDataError) as err:
            load()
        assert str(tmp_path) in str(err.value) and "\n" not in str(err.value)


def test_cifar10n_file_in_its_real_format(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    (tmp_path / "cifar10n").mkdir()
    rng = np.random.default_rng(0)
    table = {k: rng.integers(0, 10, 50) for k in ("aggre_label", "worse_label", "clean_label")}
    torch.save(table, tmp_path / "cifar10n" / "CIFAR-10_human.pt")  # a dict of NumPy arrays
    labels = cifar10n_labels("worse_label")
    assert labels.dtype == torch.long and labels.tolist() == table["worse_label"].tolist()
    with pytest.raises(ValueError, match="choose one of"):
        cifar10n_labels("best_label")


def test_augmentations_are_seeded_and_shape_preserving():
    x = torch.rand(8, 3, 32, 32)
    a = augment.cifar(x, torch.Generator().manual_seed(0))
    b = augment.cifar(x, torch.Generator().manual_seed(0))
    assert a.shape == x.shape and torch.equal(a, b)
    assert not torch.equal(a, augment.cifar(x, torch.Generator().manual_seed(1)))
    ones = augment.cutout(torch.ones(4, 1, 20, 20), torch.Generator().manual_seed(0), size=8)
    assert ((ones == 0).flatten(1).sum(1) <= 64).all() and (ones == 0).any()
    # a crop with zero padding is the identity up to the flip
    same = augment.crop_flip(x, torch.Generator().manual_seed(0), padding=0)
    assert all(torch.equal(s, o) or torch.equal(s, o.flip(2)) for s, o in zip(same, x))


def test_tensor_batches_apply_augmentation():
    x, y = torch.rand(10, 1, 8, 8), torch.arange(10)
    batches = TensorBatches(x, y, 5, augment=lambda xb, g: xb * 0)
    assert all(xb.abs().sum() == 0 for xb, _, _ in batches)
