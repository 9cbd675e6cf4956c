from dataclasses import dataclass
from typing import Literal

import pytest

from memlib.config import ConfigError, build, check, from_namespace, to_dict


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
