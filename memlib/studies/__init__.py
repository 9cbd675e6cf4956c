"""The registry of studies: each study's package by its name (memlib.STUDIES gives the notebook).

The one way up from the runner and the claims commands to the studies: what needs a study's
`Config`, `run` or claims by name asks here, so the import is written out where the layer
contract sees it. The modules load on first use (they import torch).
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

from memlib import STUDIES

if TYPE_CHECKING:
    from memlib.claims import Claim


def module(study: str) -> types.ModuleType:
    """The package of the study `study` (a key of memlib.STUDIES)."""
    from memlib.studies import fisher, lens, modarith, probes, rlp

    modules = {"rlp": rlp, "modarith": modarith, "fisher": fisher, "probes": probes,
               "lens": lens}
    return modules[study]


def preset_config(study: str, scale: str):
    """The study's Config as its parameter file for `scale` sets it."""
    from memlib.presets import preset_of

    return preset_of(module(study).Config, study, scale)


def settings(study: str, params: dict) -> dict:
    """Every parameter of the study's Config as `params` set them, the rest at their defaults
    (the small run), typed: what a notebook is given and its manifest records."""
    from memlib.config import from_namespace, to_dict

    return to_dict(from_namespace(module(study).Config, params))


def data_used(study: str, params: dict) -> list[str]:
    """The in-memory datasets a run of `study` with `params` reads, as its Config resolved them
    when it was built (the fields it names in DATASET_FIELDS; for the lens, also study 1's)."""
    from memlib.config import from_namespace

    return datasets_of(from_namespace(module(study).Config, params))


def datasets_of(config) -> list[str]:
    """The in-memory datasets a run of `config` reads (`data_used`)."""
    from memlib.data import DATASETS

    names = []
    for found in (config, getattr(config, "study1", None)):
        for field in getattr(type(found), "DATASET_FIELDS", ()):
            value = getattr(found, field)
            names += [value] if isinstance(value, str) else list(value)
    return [n for n in dict.fromkeys(names) if n in DATASETS]


def check_before_a_run(study: str, config) -> None:
    """What only the data, or the study's analysis, can refuse, checked before any work, in
    one line: every dataset the run reads has images, of more than one class
    (`data.check_before_a_run`: CorruptDataError, DataRequestError), and the study's own
    checks (`check_before_a_run` in its config module, where it has one: ConfigError), such as
    a size the data cannot give, which would otherwise be cut to the data unseen."""
    import importlib

    from memlib.data import check_before_a_run as check_data

    for name in datasets_of(config):
        check_data(name)
    own = importlib.import_module(f"memlib.studies.{study}.config")
    if hasattr(own, "check_before_a_run"):
        own.check_before_a_run(config)


def study_claims(study: str) -> list[Claim]:
    """The study's claims (the lens's depend on the datasets its small preset runs)."""
    found = module(study)
    if hasattr(found, "CLAIMS"):
        return list(found.CLAIMS)
    return found.claims_for(preset_config(study, "small"))


def claims_not_at(study: str, scale: str) -> set[str]:
    """The ids of the claims the study's small preset judges and its preset at `scale` does
    not: the lens judges only the datasets its preset runs (Fashion-MNIST alone at the smoke
    scale), so a report at that scale expects no row of the others."""
    found = module(study)
    if hasattr(found, "CLAIMS"):
        return set()
    return ({c.id for c in found.claims_for(preset_config(study, "small"))}
            - {c.id for c in found.claims_for(preset_config(study, scale))})


def every_claim() -> list[tuple[str, Claim]]:
    """(study, claim) for every current claim and every earlier version it keeps."""
    pairs = []
    for study in STUDIES:
        for claim in study_claims(study):
            pairs += [(study, c) for c in (claim, *claim.previous)]
    return pairs
