"""Each row's measured value, stored beside claims.csv as JSON (`claims_values.json`), and the
check that a rule registered as moved (`memlib register --moved`) still gives the same
verdict and value: the committed code and the working tree's each evaluate the stored values
(or, where a study has none stored yet, the rules' own Cases), the committed code in a
process of its own. A stored value names its type, which must be one of memlib's: the file
never chooses what is imported."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memlib import DEFAULT_SCALE, STUDIES, paths
from memlib.claims.rules import Claim, evaluate
from memlib.process import atomic_write_bytes


class DamagedFileError(RuntimeError):
    """A register file, a claims table or its stored values cannot be read as written: one
    line naming it."""


VALUES_FILE = "claims_values.json"
TYPE, FIELDS, PAIRS = "__type__", "fields", "__map__"


def encode(value: Any) -> Any:
    """A measured value as JSON data: an Estimate (or any dataclass) as its type's dotted
    name and its fields, a mapping with keys other than strings as its (key, value) pairs,
    tuples as lists, numpy scalars as numbers; anything else as its text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return {TYPE: f"{kind.__module__}.{kind.__qualname__}",
                FIELDS: {f.name: encode(getattr(value, f.name))
                         for f in dataclasses.fields(value)}}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {PAIRS: [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()  # a numpy scalar
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


# the decoder, as source: the committed code's process runs it too, whatever that code has
DECODE = '''
def decode(data):
    import dataclasses, importlib
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "__map__" in data:
        return {(tuple(k) if isinstance(k, list) else decode(k)): decode(v)
                for k, v in data["__map__"]}
    if "__type__" in data:
        module, _, name = str(data["__type__"]).rpartition(".")
        if module != "memlib" and not module.startswith("memlib."):
            raise ValueError(f"a value names the type {data['__type__']!r}, outside memlib")
        try:
            kind = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            import memlib.claims as kind_home
            kind = getattr(kind_home, name)
        known = {f.name for f in dataclasses.fields(kind)}
        fields = {k: (tuple(decode(v)) if isinstance(v, list) else decode(v))
                  for k, v in data["fields"].items() if k in known}
        return kind(**fields)
    return {k: decode(v) for k, v in data.items()}
'''
_space: dict = {}
exec(DECODE, _space)  # noqa: S102 - the one decoder, shared with the committed code's process
decode = _space["decode"]


def write_values(measured: Mapping[str, Any], study: str, scale: str = DEFAULT_SCALE) -> Path:
    """Store each row's measured value beside the study's claims.csv."""
    path = paths.figures_dir(study, scale) / VALUES_FILE
    text = json.dumps({k: encode(v) for k, v in measured.items()}, indent=1, sort_keys=True,
                      ensure_ascii=False)
    atomic_write_bytes(path, text.encode())
    return path


def read_values(study: str, scale: str = DEFAULT_SCALE) -> dict[str, Any] | None:
    """The stored measured values of a study (memlib.STUDIES key or notebook), or None."""
    path = paths.figures_dir(STUDIES.get(study, study), scale) / VALUES_FILE
    if not path.exists():
        return None
    try:  # a value names only memlib's own types: a data file never chooses an import
        return {k: decode(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}
    except (ValueError, TypeError, AttributeError) as err:
        raise DamagedFileError(f"{path} is damaged: {str(err).splitlines()[0]}; rerun its "
                               "notebook or restore it from version control") from None


def outcomes(claims: Sequence[Claim], values: Mapping[str, Any]) -> dict[str, list[str]]:
    """claim id (or id#case) -> [verdict, headline, value] of each claim on each value."""
    out = {}
    for key, value in values.items():
        claim_id = key.split("#")[0]
        found = [c for c in claims if c.id == claim_id]
        if found:
            row = evaluate(found, {claim_id: value}).iloc[0]
            out[key] = [row["verdict"], row["headline"], row["ours"]]
    return out


# run by the committed code's process: the outcomes of its own rules on the given values
_OLD = DECODE + '''
import json, sys
from memlib import studies
from memlib.claims import evaluate
study, values = sys.argv[1], json.load(open(sys.argv[2], encoding="utf-8"))
claims = {c.id: c for c in studies.study_claims(study)}
out = {}
for key, value in values.items():
    claim = claims.get(key.split("#")[0])
    if claim is not None:
        row = evaluate([claim], {claim.id: decode(value)}).iloc[0]
        out[key] = [row["verdict"], row["headline"], row["ours"]]
print(json.dumps(out))
'''


def case_values(claims: Sequence[Claim]) -> dict[str, Any]:
    """Every claim's Cases as values to evaluate: id#holds, id#fails, id#<precondition>."""
    out = {}
    for claim in claims:
        if claim.cases is None:
            continue
        out[f"{claim.id}#holds"] = claim.cases.holds
        out[f"{claim.id}#fails"] = claim.cases.fails
        for name, value in claim.cases.preconditions.items():
            out[f"{claim.id}#{name}"] = value
    return out


def committed_tree(into: Path, ref: str = "HEAD") -> Path:
    """The committed code (`ref`'s memlib/ and params/) unpacked under `into`. `ref` reaches
    git only after `--end-of-options`, as a revision, and `git archive` only as the commit it
    names: a value such as `--output=x` is never an option (CalledProcessError: no commit)."""
    root = paths.repo_root()
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet",
                             "--end-of-options", f"{ref}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(root), "archive", commit, "--", "memlib",
                              "params"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def verify_moved(study: str, claims: Sequence[Claim], old_root: Path,
                 ids: Sequence[str]) -> tuple[list[str], str]:
    """Whether the claims `ids` give the same verdict, headline and value under the code in
    `old_root` (the committed one) as under `claims` (the working tree's), on the stored
    measured values of the default scale, or on the rules' Cases where none are stored:
    (one line per difference, what they were evaluated on)."""
    stored = read_values(study)
    wanted = [c for c in claims if c.id in ids]
    if stored is not None:
        values, basis = {k: v for k, v in stored.items() if k in ids}, "the stored values"
    else:
        values, basis = case_values(wanted), "the rules' Cases (no values stored yet)"
    new = outcomes(wanted, values)
    script = old_root / "values.json"
    script.write_text(json.dumps({k: encode(v) for k, v in values.items()}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _OLD, study, str(script)],
                          capture_output=True, text=True, cwd=old_root,
                          env={**os.environ, "PYTHONPATH": str(old_root)})
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"the committed code could not evaluate them ({last})"], basis
    old = json.loads(done.stdout.strip().splitlines()[-1])
    differ = []
    for key in sorted(new):
        if old.get(key) != new[key]:
            was = old.get(key, ["not a claim there"])[0]
            differ.append(f"{key}: {was} before, {new[key][0]} now"
                          + ("" if was != new[key][0] else " (its value differs)"))
    return differ, basis


# run by an earlier commit's process: the fingerprints of its rules and of the versions each
# keeps in `previous`, as that code computed them
_PRINTS = '''
import json, sys
from memlib import studies
print(json.dumps({c.id: [[v.fingerprint, v.text_fingerprint] for v in (c, *c.previous)]
                  for c in studies.study_claims(sys.argv[1])}))
'''


def earlier_prints(study: str, old_root: Path) -> dict[str, list[tuple[str, str]]]:
    """claim id -> (fingerprint, text fingerprint) of the rule and of each version it keeps,
    as the code unpacked in `old_root` computes them; RuntimeError with its last line when
    that code cannot."""
    done = subprocess.run([sys.executable, "-c", _PRINTS, study], capture_output=True,
                          text=True, cwd=old_root, env={**os.environ, "PYTHONPATH": str(old_root)})
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the earlier code could not fingerprint its rules ({last})")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {claim_id: [tuple(pair) for pair in pairs] for claim_id, pairs in found.items()}
