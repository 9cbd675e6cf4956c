"""Every study's claims as registered: the study modules' CLAIMS (the lens's depend on the
datasets its small preset runs). Sits above the studies; used by the register command and
the register's tests."""

from __future__ import annotations

import importlib

from memlib import STUDIES
from memlib.claims import Claim


def study_claims(study: str) -> list[Claim]:
    module = importlib.import_module(f"memlib.{study}")
    if hasattr(module, "CLAIMS"):
        return list(module.CLAIMS)
    from memlib.presets import preset_config

    return module.claims(preset_config(study, "small"))


def every_claim() -> list[tuple[str, Claim]]:
    """(study, claim) for every current claim and every earlier version it keeps."""
    pairs = []
    for study in STUDIES:
        for claim in study_claims(study):
            pairs += [(study, c) for c in (claim, *claim.previous)]
    return pairs
