from dataclasses import dataclass
from typing import Annotated, Literal

import pytest

from memlib.config import (
    ConfigError,
    NonEmpty,
    Positive,
    Range,
    Rate,
    build,
    check,
    check_fields,
    from_namespace,
    to_dict,
)


@dataclass(frozen=True)
class Example:
    lr: float = 1e-3
    epochs: int = 2
    widths: tuple[int, ...] = (8, 8)
    rates: tuple[float, ...] = (0.0,)
    model: Literal["mlp", "cnn"] = "mlp"
    flag: bool = False
    limit: int | None = None

    def __post_init__(self):
        check(0 < self.lr < 1, f"lr must be in (0, 1), got {self.lr}")


def test_coerces_yaml_and_papermill_strings():
    c = build(Example, {"lr": "1e-3", "epochs": "3", "widths": "[4, 5]", "rates": "0.2",
                        "flag": "true", "limit": "none"})
    assert c == Example(lr=1e-3, epochs=3, widths=(4, 5), rates=(0.2,), flag=True)
    assert build(Example, {"limit": "7"}).limit == 7
    assert build(Example, {"epochs": 4.0}).epochs == 4


@pytest.mark.parametrize("params, fragment", [
    ({"lrr": 1}, "unknown parameter 'lrr'"),
    ({"model": "vit"}, "choose one of: mlp, cnn"),
    ({"epochs": "two"}, "not an integer"),
    ({"epochs": 2.5}, "not an integer"),
    ({"lr": "fast"}, "not a number"),
    ({"flag": "maybe"}, "not a boolean"),
    ({"lr": 5.0}, "lr must be in (0, 1)"),
])
def test_bad_values_give_one_line(params, fragment):
    with pytest.raises(ConfigError) as err:
        build(Example, params)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_from_namespace_and_to_dict():
    c = from_namespace(Example, {"epochs": 5, "scale": "small", "other": 1})
    assert c.epochs == 5
    assert to_dict(c)["widths"] == [8, 8]


@dataclass(frozen=True)
class Bounded:
    epochs: Annotated[int, Positive] = 2
    rates: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.0, 0.5)
    limit: Annotated[int | None, Range(1, 10)] = None

    def __post_init__(self):
        check_fields(self)


@pytest.mark.parametrize("params, message", [
    ({"epochs": 0}, "epochs=0 must be positive"),
    ({"epochs": "true"}, "epochs='true' is not an integer"),
    ({"rates": []}, "rates=[] must not be empty"),
    ({"rates": "[0.1, 1.0]"}, "rates[1]=1.0 must be in [0, 1)"),
    ({"rates": "[0.1,"}, "rates='[0.1,' is not valid YAML"),
    ({"rates": [float("nan")]}, "rates[0]=nan is not a finite number"),
    ({"limit": 11}, "limit=11 must be in [1, 10]"),
])
def test_declared_domains_are_checked_in_one_line(params, message):
    with pytest.raises(ConfigError) as err:
        build(Bounded, params)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_domains_allow_none_and_check_direct_construction():
    assert build(Bounded, {"limit": "null", "rates": "0.2"}) == Bounded(rates=(0.2,))
    with pytest.raises(ConfigError, match="epochs=-1 must be positive"):
        Bounded(epochs=-1)
