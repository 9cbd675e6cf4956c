"""ImageNet-style data for full-scale runs: ImageFolder splits, class-balanced fractions,
ImageNet-LT list files. Each dataset yields (image, label, index) like IndexedDataset.

Expected layout under $MEMLIB_DATA/imagenet/: train/<wnid>/*.JPEG and val/<wnid>/*.JPEG
(the usual ImageFolder arrangement of ILSVRC-2012); ImageNet-LT list files
(ImageNet_LT_train.txt, ImageNet_LT_test.txt: "<relative path> <label>" per line)
in $MEMLIB_DATA/imagenet_lt/.
"""

from __future__ import annotations

from pathlib import Path

import torch

from memlib import paths
from memlib.data import MissingDataError, stratified_subset

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def transform(train: bool, size: int = 224):
    """Standard augmentation: random-resized crop + flip for training, resize + centre crop."""
    from torchvision import transforms as T

    ops = ([T.RandomResizedCrop(size), T.RandomHorizontalFlip()] if train
           else [T.Resize(int(size * 256 / 224)), T.CenterCrop(size)])
    return T.Compose([*ops, T.ToTensor(), T.Normalize(MEAN, STD)])


class _Indexed(torch.utils.data.Dataset):
    def __init__(self, samples: list[tuple[str, int]], transform, classes: list[str]):
        self.samples, self.transform, self.classes = samples, transform, classes
        self.targets = [label for _, label in samples]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i):
        from PIL import Image

        path, label = self.samples[i]
        with Image.open(path) as image:
            x = image.convert("RGB")
        return (x if self.transform is None else self.transform(x)), label, i


def _root(name: str, root) -> Path:
    return Path(root) if root is not None else paths.data_dir() / name


def imagenet(split: str = "train", root=None, fraction: float | None = None, seed: int = 0,
             transform_fn=None) -> torch.utils.data.Dataset:
    """ImageNet `split` ("train"/"val") as (image, label, index); `fraction` keeps a
    class-balanced subset (indices renumbered 0..n-1 so random labels key the subset)."""
    from torchvision.datasets.folder import IMG_EXTENSIONS, make_dataset

    directory = _root("imagenet", root) / split
    if not directory.is_dir():
        raise MissingDataError(
            f"ImageNet {split} folder {directory} not found; put ILSVRC-2012 there in "
            "ImageFolder layout (<wnid>/<image>.JPEG) or set MEMLIB_DATA.")
    classes = sorted(d.name for d in directory.iterdir() if d.is_dir())
    samples = make_dataset(str(directory), {c: i for i, c in enumerate(classes)}, IMG_EXTENSIONS)
    full = _Indexed(samples, transform_fn or transform(split == "train"), classes)
    if fraction is not None and fraction < 1:
        return select(full, stratified_subset(torch.tensor(full.targets), fraction=fraction,
                                              seed=seed))
    return full


def select(dataset: _Indexed, indices, labels=None, transform_fn=None) -> _Indexed:
    """The samples at `indices` as a dataset of their own, renumbered 0..n-1 (so a table
    indexed by subset position, such as random labels, keys them); `labels` replaces their
    labels (label noise), `transform_fn` the transform (e.g. evaluation without augmentation)."""
    samples = [dataset.samples[i] for i in torch.as_tensor(indices).tolist()]
    if labels is not None:
        samples = [(path, label) for (path, _), label in
                   zip(samples, torch.as_tensor(labels).tolist(), strict=True)]
    return _Indexed(samples, transform_fn or dataset.transform, dataset.classes)


def imagenet_lt(split: str = "train", root=None, images_root=None, transform_fn=None
                ) -> torch.utils.data.Dataset:
    """ImageNet-LT (Liu et al. 2019) from its list file over the ImageNet images."""
    list_file = _root("imagenet_lt", root) / f"ImageNet_LT_{split}.txt"
    images = _root("imagenet", images_root)
    if not list_file.is_file():
        raise MissingDataError(
            f"ImageNet-LT list file {list_file} not found; download ImageNet_LT_{split}.txt "
            "(Liu et al., OLTR) into that folder or set MEMLIB_DATA.")
    samples = []
    for line in list_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            relative, label = line.rsplit(maxsplit=1)
            samples.append((str(images / relative), int(label)))
    num_classes = max(label for _, label in samples) + 1
    return _Indexed(samples, transform_fn or transform(split == "train"),
                    [str(c) for c in range(num_classes)])
