"""Models with named intermediate representations.

Every memlib model lists its probe points in `probe_layers` (module names); any
model, including timm and torchvision ones, can be tapped by module name with
`taps(model, names)`. timm and torchvision are imported only inside their builders.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
from collections import OrderedDict
from collections.abc import Iterator, Sequence

import torch
from torch import nn

ACTIVATIONS = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
}
MODELS = ("mlp", "smallcnn", "wrn", "resnet18", "vit_tiny", "vit_base_patch32_224")


def _activation(name: str) -> nn.Module:
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; choose one of: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]()


class MLP(nn.Sequential):
    """Flatten -> (fc_i -> act_i [-> drop_i]) * len(widths) -> out. Probe points: act_i."""

    def __init__(self, in_features: int, widths: Sequence[int], num_classes: int,
                 activation: str = "relu", bias: bool = True, dropout: float = 0.0):
        layers: dict[str, nn.Module] = {"flatten": nn.Flatten()}
        previous = in_features
        for i, width in enumerate(widths, start=1):
            layers[f"fc{i}"] = nn.Linear(previous, width, bias=bias)
            layers[f"act{i}"] = _activation(activation)
            if dropout > 0:
                layers[f"drop{i}"] = nn.Dropout(dropout)
            previous = width
        layers["out"] = nn.Linear(previous, num_classes, bias=bias)
        super().__init__(OrderedDict(layers))
        self.probe_layers = tuple(f"act{i}" for i in range(1, len(widths) + 1))

    def linear_layers(self) -> list[tuple[str, nn.Linear]]:
        return [(n, m) for n, m in self.named_children() if isinstance(m, nn.Linear)]


def _conv_block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
    )


class SmallCNN(nn.Module):
    """Three conv-BN-ReLU-pool blocks, global average pooling, dropout, linear classifier."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10,
                 channels: Sequence[int] = (32, 64, 128), dropout: float = 0.0):
        super().__init__()
        if len(channels) != 3:
            raise ValueError(f"SmallCNN takes three channel widths, got {tuple(channels)}")
        c1, c2, c3 = channels
        self.block1 = _conv_block(in_channels, c1)
        self.block2 = _conv_block(c1, c2)
        self.block3 = _conv_block(c2, c3)
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(c3, num_classes)
        self.probe_layers = ("block1", "block2", "block3", "pool")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block3(self.block2(self.block1(x)))
        return self.fc(self.drop(self.pool(x)))


class _WideBasic(nn.Module):
    """Pre-activation wide-ResNet block (Zagoruyko & Komodakis 2016)."""

    def __init__(self, cin: int, cout: int, stride: int, dropout: float):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(cout), nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.drop = nn.Dropout(dropout)
        self.shortcut = (
            None if cin == cout and stride == 1 else nn.Conv2d(cin, cout, 1, stride, bias=False)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(x))
        skip = x if self.shortcut is None else self.shortcut(out)
        out = self.conv1(out)
        out = self.conv2(self.drop(torch.relu(self.bn2(out))))
        return out + skip


class WideResNet(nn.Module):
    """WRN-depth-width for 32x32 inputs (CIFAR). Probe points: block1..3 and pool."""

    def __init__(self, depth: int = 16, width: int = 4, num_classes: int = 100,
                 in_channels: int = 3, dropout: float = 0.0):
        super().__init__()
        if (depth - 4) % 6:
            raise ValueError(f"WideResNet depth must be 6n+4 (e.g. 16, 28), got {depth}")
        n = (depth - 4) // 6
        widths = [16, 16 * width, 32 * width, 64 * width]
        self.conv = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)

        def group(cin, cout, stride):
            return nn.Sequential(*[
                _WideBasic(cin if i == 0 else cout, cout, stride if i == 0 else 1, dropout)
                for i in range(n)
            ])

        self.block1 = group(widths[0], widths[1], 1)
        self.block2 = group(widths[1], widths[2], 2)
        self.block3 = group(widths[2], widths[3], 2)
        self.bn = nn.BatchNorm2d(widths[3])
        self.pool = nn.Sequential(nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(widths[3], num_classes)
        self.probe_layers = ("block1", "block2", "block3", "pool")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block3(self.block2(self.block1(self.conv(x))))
        return self.fc(self.pool(self.bn(x)))


def vit(name: str = "vit_tiny", num_classes: int = 10, image_size: int = 28,
        in_channels: int = 1, **kwargs) -> nn.Module:
    """A timm VisionTransformer, never pretrained. `vit_tiny` is a 4-block, 64-dim ViT
    with 7x7 patches for 28x28 images; other names go to `timm.create_model`."""
    import timm
    from timm.models.vision_transformer import VisionTransformer

    if name == "vit_tiny":
        defaults = dict(patch_size=7, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0)
        model = VisionTransformer(img_size=image_size, in_chans=in_channels,
                                  num_classes=num_classes, **{**defaults, **kwargs})
    else:
        model = timm.create_model(name, pretrained=False, num_classes=num_classes,
                                  img_size=image_size, in_chans=in_channels, **kwargs)
    model.probe_layers = tuple(f"blocks.{i}" for i in range(len(model.blocks)))
    return model


def resnet18(num_classes: int = 10, in_channels: int = 3, cifar_stem: bool = False) -> nn.Module:
    """torchvision ResNet18, random init; `cifar_stem`: 3x3 stride-1 stem, no max-pool."""
    import torchvision

    model = torchvision.models.resnet18(weights=None, num_classes=num_classes)
    if cifar_stem or in_channels != 3:
        stride, kernel = (1, 3) if cifar_stem else (2, 7)
        model.conv1 = nn.Conv2d(in_channels, 64, kernel, stride, kernel // 2, bias=False)
        if cifar_stem:
            model.maxpool = nn.Identity()
    model.probe_layers = ("layer1", "layer2", "layer3", "layer4", "avgpool")
    return model


def build(name: str, num_classes: int, in_shape: Sequence[int], **kwargs) -> nn.Module:
    """Build a model by name for inputs of shape `in_shape` = (C, H, W)."""
    c, h, w = in_shape
    if name == "mlp":
        return MLP(c * h * w, kwargs.pop("widths", (256, 256, 256)), num_classes, **kwargs)
    if name == "smallcnn":
        return SmallCNN(c, num_classes, **kwargs)
    if name == "wrn":
        return WideResNet(num_classes=num_classes, in_channels=c, **kwargs)
    if name == "resnet18":
        return resnet18(num_classes, c, **kwargs)
    if name.startswith("vit"):
        return vit(name, num_classes, h, c, **kwargs)
    raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")


def unknown_model(name: str) -> str | None:
    """None if `build` knows `name` (memlib's models and timm's `vit_*`); else one line
    naming the nearest known names."""
    if name in MODELS or name.startswith("vit_") and name.split(".")[0] in _timm_vits():
        return None
    nearest = difflib.get_close_matches(name, list(dict.fromkeys([*MODELS, *_timm_vits()])),
                                        n=3, cutoff=0)
    return (f"unknown model {name!r}; did you mean {', '.join(nearest)}? (memlib's own: "
            f"{', '.join(MODELS)}; or any of timm's vit_* models)")


@functools.cache
def _timm_vits() -> frozenset[str]:
    import timm

    return frozenset(timm.list_models("vit_*"))


def pool(feature: torch.Tensor) -> torch.Tensor:
    """A vector per example: mean over space for conv maps (N,C,H,W), over tokens for (N,T,D)."""
    if feature.ndim == 4:
        return feature.mean(dim=(2, 3))
    if feature.ndim == 3:
        return feature.mean(dim=1)
    return feature.flatten(1)


@contextlib.contextmanager
def taps(model: nn.Module, names: Sequence[str]) -> Iterator[dict[str, torch.Tensor]]:
    """Record the outputs of the named submodules during forward passes inside the block.

    The recorded tensors are live (not detached), so losses on them reach the model.
    """
    # a torch.compile'd model keeps its names under `_orig_mod`; hooks there still fire
    modules = dict(getattr(model, "_orig_mod", model).named_modules())
    missing = [n for n in names if n not in modules]
    if missing:
        valid = getattr(model, "probe_layers", None) or [n for n in modules if n][:20]
        raise ValueError(f"unknown layer {missing[0]!r}; valid names include: {', '.join(valid)}")
    outputs: dict[str, torch.Tensor] = {}
    handles = []
    for name in names:
        def hook(_module, _inputs, output, name=name):
            outputs[name] = output
        handles.append(modules[name].register_forward_hook(hook))
    try:
        yield outputs
    finally:
        for handle in handles:
            handle.remove()


def features(model: nn.Module, x: torch.Tensor, names: Sequence[str] | None = None
             ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(logits, {name: representation}) for the named layers (default: model.probe_layers)."""
    names = list(names if names is not None else model.probe_layers)
    with taps(model, names) as outs:
        logits = model(x)
    return logits, dict(outs)


# ----------------------------------------------------------------------------- any model


def external(name: str) -> bool:
    """Whether `name` is a model `build` does not make: `timm:NAME`, or a torchvision name."""
    return unknown_model(name) is not None


def unknown_any(name: str) -> str | None:
    """None if `build_any` makes `name` (memlib's own models, `timm:NAME` for any of timm's
    models, any torchvision classification model); else one line naming the nearest."""
    if name.startswith("timm:") and name[5:] in _timm_all():
        return None
    if not external(name) or name in _torchvision_all():
        return None
    known = list(dict.fromkeys([*MODELS, *_torchvision_all(),
                                *(f"timm:{n}" for n in _timm_all())]))
    nearest = difflib.get_close_matches(name, known, n=3, cutoff=0)
    return (f"unknown model {name!r}; did you mean {', '.join(nearest)}? (memlib's own "
            f"{', '.join(MODELS)}, torchvision's names, or timm:NAME for a timm model)")


@functools.cache
def _timm_all() -> tuple[str, ...]:
    import timm

    return tuple(timm.list_models())


@functools.cache
def _torchvision_all() -> tuple[str, ...]:
    import torchvision

    return tuple(torchvision.models.list_models(module=torchvision.models))


def build_external(name: str, num_classes: int, in_shape: Sequence[int]) -> nn.Module:
    """A timm (`timm:NAME`) or torchvision model, random init (never downloaded), that takes
    images of `in_shape` = (C, H, W): a grey image is repeated over the model's three
    channels, and resized where the model reads a fixed size (a ViT's 224 x 224). The input
    of its classifier is the output of a module named `head_drop` (timm's name, which the
    Fisher study's last-layer tap reads), added as an identity where the model has none.
    `probe_layers`: its natural stages (`natural_layers`)."""
    if name.startswith("timm:"):
        import timm

        model = timm.create_model(name[5:], pretrained=False, num_classes=num_classes)
        channels, height, width = model.pretrained_cfg.get("input_size", (3, 224, 224))
        fixed = (height, width) if hasattr(model, "patch_embed") else None
        classifier = model.get_classifier()
    else:
        import torchvision

        model = torchvision.models.get_model(name, weights=None, num_classes=num_classes)
        channels, size = 3, getattr(model, "image_size", None)
        fixed = (size, size) if isinstance(size, int) else None
        linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
        classifier = linears[-1] if linears else None
    if not isinstance(classifier, nn.Linear):
        raise ValueError(f"model {name!r} has no final linear classifier to measure")
    _adapt_inputs(model, in_shape[0], channels, fixed)
    if "head_drop" not in dict(model.named_modules()):
        model.head_drop = nn.Identity()
        classifier.register_forward_pre_hook(lambda _m, args: (model.head_drop(args[0]),))
    model.probe_layers = natural_layers(model, classifier)
    return model


def _adapt_inputs(model: nn.Module, given: int, channels: int, size) -> None:
    """A forward pre-hook that repeats a grey image over `channels` and resizes it to `size`
    (None: any size), so the data stay as memlib loads them and the layers keep their names."""
    import torch.nn.functional as F

    if given not in (1, channels):
        raise ValueError(f"{given}-channel images for a {channels}-channel model")

    def adapt(_module, args):
        x = args[0]
        if x.shape[1] != channels:
            x = x.expand(-1, channels, -1, -1)
        if size is not None and tuple(x.shape[-2:]) != tuple(size):
            x = F.interpolate(x, size=tuple(size), mode="bilinear", align_corners=False)
        return (x, *args[1:])

    model.register_forward_pre_hook(adapt)


def natural_layers(model: nn.Module, classifier: nn.Module | None = None) -> tuple[str, ...]:
    """The model's natural stages: timm's `feature_info` modules; else its named children
    that hold weights, the classifier left out (descending into the one child that holds
    them all, e.g. a `features` Sequential)."""
    info = getattr(model, "feature_info", None)
    if info:
        names = [f["module"] if isinstance(f, dict) else f for f in
                 (info.get_dicts() if hasattr(info, "get_dicts") else info)]
        modules = dict(model.named_modules())
        names = [n for n in names if n in modules]
        if names:
            return tuple(names)
    prefix, parent = "", model
    while True:
        stages = [(f"{prefix}{n}", m) for n, m in parent.named_children()
                  if m is not classifier and n != "head_drop"
                  and any(p.ndim >= 2 for p in m.parameters())
                  and not any(c is classifier for c in m.modules())]
        if len(stages) != 1 or not list(stages[0][1].children()):
            return tuple(n for n, _ in stages)
        prefix, parent = f"{stages[0][0]}.", stages[0][1]


def load_checkpoint(model: nn.Module, path: str) -> None:
    """Give `model` the weights stored at `path` (a state dict, or one under "state_dict" or
    "model"), read with `weights_only` so that a file runs no code; ValueError when they do
    not fit the model."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, dict):
        for key in ("state_dict", "model"):
            if isinstance(state.get(key), dict):
                state = state[key]
    if not isinstance(state, dict):
        raise ValueError(f"checkpoint {path} holds no state dict")
    try:
        model.load_state_dict(state)
    except RuntimeError as err:
        first = next((line.strip() for line in str(err).splitlines()[1:] if line.strip()),
                     str(err))
        first = first if len(first) <= 160 else first[:157] + "..."
        raise ValueError(f"checkpoint {path} does not match the model: {first}") from None
