"""The register: every rule's fingerprint, recorded before the confirmatory run
(`register/<notebook>.yaml`, written by `python -m memlib register`), the confirmatory runs it
replaced (`register/earlier/`), and the check of each result's fingerprint against it.

A register entry is (id, version, fingerprint, registered, reason), plus `same_rule_as: N`
when the entry records the same rule as version N under another fingerprint: one that covers
more (the code and preset values that decide it, where version N's covered its words only),
or, with `moved: true`, the same words, code, constants and preset values read where the
code now lives (a fingerprint names the modules its code sits in). The rule did not change,
so its verdict is version N's, and the report says so.

The register cannot be rewritten unseen: its rule entries (`claims`) and its replaced runs
(`earlier_runs`) are each a hash chain, every entry carrying `chain`, a hash of its own
content and of the previous entry's `chain` (the first entry's previous is "genesis"), so an
edit of a committed entry breaks its hash and every later one; and the register's `head`
hashes everything else that decides a verdict (the seeds, the planned n, the replication
flag, every other setting) with both chains' last hashes and lengths, so an edited seed or a
removed last entry breaks it too (`chain_problems`). A register rewritten whole, its hashes
recomputed, is caught by its anchor outside the file: the claims report records each
register's anchor (`anchor_of`: the settings' hash and each chain's length and last hash),
and `memlib claims` and `memlib register` refuse a register that does not extend the anchor
the report holds (`verify_register`): entries are only appended, and the settings change only
with a new confirmatory run; the test suite checks every committed version of every register
against the one before it in git's history. A missing register is refused in one line.
A new confirmatory run of rule versions that already had one is refused unless it is a
replication, and so is a seed any earlier run, pilot or benchmark used
(`register/seed-ledger.yaml`)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from memlib import DEFAULT_SCALE, STUDIES, paths
from memlib.claims.power import IN_FAMILY
from memlib.claims.rules import Claim
from memlib.claims.values import DamagedFileError, write_values
from memlib.config import SEED_MAX
from memlib.process import atomic_write_bytes
from memlib.tables import save_table

CLAIMS_TABLE = "claims"
ENTRY_KEYS = ("id", "version", "fingerprint")
CHAIN = "chain"  # an entry's hash, chained to the previous entry's
CHAINED = ("claims", "earlier_runs")  # the register's append-only lists
GENESIS = "genesis"
HEAD = "head"  # the hash of the settings and of both chains' ends: the register's own check
SEED_LEDGER = "seed-ledger.yaml"


class MissingRegisterError(DamagedFileError):
    """A study has no register: one line saying how to restore it."""


def register_path(study: str) -> Path:
    return paths.repo_root() / "register" / f"{STUDIES.get(study, study)}.yaml"


def _shown(path: Path) -> str:
    try:
        return path.relative_to(paths.repo_root()).as_posix()
    except ValueError:
        return str(path)


def read_register(study: str, missing_ok: bool = False) -> dict:
    """The study's register: confirmatory and pilot seeds, and one entry per registered rule
    version (id, version, fingerprint, registered date, reason). MissingRegisterError if there
    is none (an empty register with `missing_ok`); DamagedFileError if it is not the YAML
    mapping the register command writes."""
    import yaml

    path = register_path(study)
    if not path.exists() and missing_ok:
        return {"seeds": [], "pilot_seeds": [], "claims": []}
    if not path.exists():
        raise MissingRegisterError(
            f"{_shown(path)} is missing; restore it from version control (git checkout -- "
            f"{_shown(path)}), or start an empty one with `memlib register {study} "
            "--new-register --reason ...`, which loses every earlier registration, seed and "
            "replaced run")
    damaged = f"{_shown(path)} is damaged"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as err:
        raise DamagedFileError(f"{damaged}: not UTF-8 text (byte {err.start}); restore it "
                               "from version control") from None
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise DamagedFileError(f"{damaged}: not valid YAML ({problem}); restore it from "
                               "version control") from None
    entries = data.get("claims", []) if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and all(k in e for k in ENTRY_KEYS)
            and type(e["version"]) is int for e in entries):
        raise DamagedFileError(f"{damaged}: expected a mapping whose claims are entries with "
                               f"{', '.join(ENTRY_KEYS)} (a whole-number version); restore it "
                               "from version control")
    return data


def entry_hash(entry: Mapping, previous: str) -> str:
    """The hash an entry's `chain` holds: of the previous entry's `chain` and of the entry's
    own content as parsed (its YAML layout, wrapping and quoting left out); 16 hex digits."""
    content = {k: v for k, v in entry.items() if k != CHAIN}
    text = previous + json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def settings_hash(data: Mapping) -> str:
    """The hash of every setting of a register outside its chains and head (the seeds, the
    pilot seeds, when they were registered, the replication flag, the planned n)."""
    settings = {k: v for k, v in data.items() if k not in (*CHAINED, HEAD)}
    text = json.dumps(settings, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def anchor_of(data: Mapping) -> dict:
    """What an anchor outside the register records of it: its settings' hash and each
    chain's length and last hash."""
    ends = {name: [len(data.get(name) or []),
                   str((data.get(name) or [{}])[-1].get(CHAIN, GENESIS))] for name in CHAINED}
    return {"settings": settings_hash(data), **ends}


def head_hash(data: Mapping) -> str:
    """The register's head: a hash of its anchor (settings, chains' lengths and ends)."""
    text = json.dumps(anchor_of(data), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def extends(data: Mapping, anchor: Mapping) -> str:
    """Why the register `data` is not the one `anchor` (`anchor_of`) recorded or one appended
    to since, or "": each chain still holds the anchored entries (its entry at the anchored
    length has the anchored hash, which chains every entry before it), and the settings are
    the anchored ones unless a confirmatory run was replaced since."""
    for name in CHAINED:
        count, last = anchor[name]
        entries = data.get(name) or []
        if len(entries) < count:
            return (f"its {name} has {len(entries)} entries where {count} were recorded "
                    "(entries were removed)")
        if count and str(entries[count - 1].get(CHAIN)) != last:
            return f"its {name} were rewritten (entry {count - 1} no longer has its recorded hash)"
    if (settings_hash(data) != anchor["settings"]
            and len(data.get("earlier_runs") or []) == anchor["earlier_runs"][0]):
        return ("its seeds, planned n or other settings changed without a new confirmatory "
                "run")
    return ""


def chain_problems(data: Mapping) -> list[str]:
    """Every break in a register's hash chains and head, one line each: an entry without its
    hash, or one whose content or predecessor no longer gives the hash it recorded (edited in
    place, removed or reordered), a register without its head (unless it holds no entry yet)
    or whose settings or chains' ends no longer give it; empty for an intact register."""
    problems = []
    for name in CHAINED:
        previous = GENESIS
        for i, entry in enumerate(data.get(name) or []):
            what = f"{name}[{i}]" + (f" ({entry['id']} v{entry['version']})"
                                     if name == "claims" else "")
            if CHAIN not in entry:
                problems.append(f"{what} has no {CHAIN} hash")
            elif entry[CHAIN] != entry_hash(entry, previous):
                problems.append(f"{what} was changed after it was appended (its {CHAIN} hash "
                                "no longer matches)")
            previous = str(entry.get(CHAIN, ""))
    if HEAD not in data:
        if any(data.get(name) for name in CHAINED):
            problems.append(f"it has no {HEAD} hash")
    elif str(data[HEAD]) != head_hash(data):
        problems.append(f"its {HEAD} hash no longer matches its seeds, settings and entries "
                        "(a setting was edited, or entries removed)")
    return problems


ANCHOR_LINE = re.compile(r"^register (?P<file>[\w.-]+\.yaml) settings=(?P<settings>\w+) "
                         r"claims=(?P<claims>\d+):(?P<claims_end>\w+) "
                         r"earlier_runs=(?P<earlier>\d+):(?P<earlier_end>\w+)$", re.M)


def anchor_line(study: str, data: Mapping) -> str:
    """The line the claims report records a register's anchor in (`read_anchors`)."""
    anchor = anchor_of(data)
    return (f"register {register_path(study).name} settings={anchor['settings']} "
            f"claims={anchor['claims'][0]}:{anchor['claims'][1]} "
            f"earlier_runs={anchor['earlier_runs'][0]}:{anchor['earlier_runs'][1]}")


def read_anchors(text: str) -> dict[str, dict]:
    """register file name -> its anchor, from the lines `anchor_line` wrote in `text`."""
    return {m["file"]: {"settings": m["settings"],
                        "claims": [int(m["claims"]), m["claims_end"]],
                        "earlier_runs": [int(m["earlier"]), m["earlier_end"]]}
            for m in ANCHOR_LINE.finditer(text)}


def recorded_anchors() -> dict[str, dict]:
    """The anchors the claims report of the default scale holds (none before its first)."""
    report = paths.claims_report(DEFAULT_SCALE)
    try:
        return read_anchors(report.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}


def verify_register(study: str, anchors: Mapping[str, Mapping] | None = None) -> dict:
    """The study's register, once it is found intact (`chain_problems`) and extending its
    anchor in `anchors` (default: the claims report's); else one line: MissingRegisterError
    or DamagedFileError."""
    data = read_register(study)
    _intact(study, data)
    anchors = recorded_anchors() if anchors is None else anchors
    anchor = anchors.get(register_path(study).name)
    problem = extends(data, anchor) if anchor else ""
    if problem:
        raise DamagedFileError(
            f"{_shown(register_path(study))} was rewritten since the claims report recorded "
            f"it: {problem}; restore it from version control and append instead")
    return data


def _append(data: dict, name: str, entry: dict) -> None:
    """Append `entry` to the chained list `name`, with its hash."""
    entries = data.setdefault(name, [])
    previous = str(entries[-1].get(CHAIN, "")) if entries else GENESIS
    entries.append({**entry, CHAIN: entry_hash(entry, previous)})


def _intact(study: str, data: Mapping) -> None:
    """DamagedFileError when the register's chains are broken: nothing is appended to them."""
    problems = chain_problems(data)
    if problems:
        raise DamagedFileError(f"{_shown(register_path(study))} was rewritten: {problems[0]}; "
                               "restore it from version control and append instead")


def chain_genesis(study: str) -> int:
    """Chain a register written before its entries were chained, once: every entry gets its
    hash in its present order, as the chains' genesis. Returns the entries chained; refuses
    a register any of whose entries is already chained."""

    data = read_register(study)
    if any(CHAIN in e for name in CHAINED for e in data.get(name) or []):
        raise ValueError(f"{_shown(register_path(study))} is already chained")
    count = 0
    for name in CHAINED:
        entries, data[name] = data.get(name) or [], []
        for entry in entries:
            _append(data, name, entry)
            count += 1
        if not data[name] and name != "claims":
            del data[name]
    _write_register(study, data)
    return count


def _write_register(study: str, data: Mapping) -> None:
    import yaml

    ordered = {k: data[k] for k in ("seeds", "pilot_seeds", "seeds_registered",
                                    "seeds_replication", "planned_n", "family",
                                    "outside_family", "earlier_runs", "claims")
               if k in data}
    ordered = {**ordered, **{k: v for k, v in data.items() if k != HEAD}}
    ordered[HEAD] = head_hash(ordered)
    text = yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=100)
    atomic_write_bytes(register_path(study), text.encode())


def seed_ledger(study: str) -> dict[int, list[str]]:
    """seed -> what used it, from register/seed-ledger.yaml (pilots, benchmarks, checks)."""
    import yaml

    path = register_path(study).parent / SEED_LEDGER
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError):
        raise DamagedFileError(f"{_shown(path)} is damaged: not YAML text; restore it from "
                               "version control") from None
    used: dict[int, list[str]] = {}
    for record in data.get(study, []) if isinstance(data, dict) else []:
        for seed in record.get("seeds", []):
            used.setdefault(int(seed), []).append(str(record.get("by", "")))
    return used


def registered_versions(study: str) -> dict[str, dict[str, int]]:
    """claim id -> {fingerprint: version} over every registered version."""
    versions: dict[str, dict[str, int]] = {}
    for entry in read_register(study).get("claims", []):
        versions.setdefault(entry["id"], {})[entry["fingerprint"]] = entry["version"]
    return versions


def latest_registration(study: str) -> dict[str, dict]:
    """claim id -> its latest register entry."""
    return _latest(read_register(study))


def _latest(data: Mapping) -> dict[str, dict]:
    latest: dict[str, dict] = {}
    for entry in data.get("claims", []):
        if entry.get("rekeyed"):  # an earlier version's fingerprint now, no rule of its own
            continue
        if entry["id"] not in latest or entry["version"] > latest[entry["id"]]["version"]:
            latest[entry["id"]] = entry
    return latest


def check_reason(reason: str) -> str:
    if not reason or not reason.strip():
        raise ValueError("a registration needs a reason: --reason 'why the rule is registered'")
    return reason.strip()


def parse_seeds(text: str) -> list[int]:
    """Comma-separated seeds as the configs accept them: integers from 0 to 2**32 - 1, at
    least one, none repeated."""
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise ValueError(f"seeds must be comma-separated integers, not {text!r}") from None
    bad = [s for s in seeds if not 0 <= s <= SEED_MAX]
    if bad:
        raise ValueError(f"seed {bad[0]} must be between 0 and {SEED_MAX}")
    if len(set(seeds)) != len(seeds):
        repeated = sorted({s for s in seeds if seeds.count(s) > 1})
        raise ValueError(f"seeds must be distinct: {', '.join(map(str, repeated))} repeated")
    return seeds


def _read_or_start(study: str, new: bool) -> dict:
    """The study's register; with `new`, an empty one where there is none."""
    return read_register(study, missing_ok=new)


def register(study: str, claims: Sequence[Claim], reason: str, today: str,
             moved: bool = False, new: bool = False) -> list[str]:
    """Append a register entry for every claim whose fingerprint differs from its latest
    registration (version 1 for a new claim); return the ids registered. A changed rule
    must keep its earlier versions in `Claim.previous` so the report shows both verdicts;
    a rule registered by its words only whose words did not change is marked `same_rule_as`
    that version, and so is every rule when `moved` says that only where its code (or the
    preset values it reads) lives changed (the registrant's statement, recorded with its
    reason, which the command line verifies first: `memlib.claims.moved`). A study without a
    register is refused (MissingRegisterError) unless `new` starts an empty one."""
    reason = check_reason(reason)
    data = _read_or_start(study, new)
    _intact(study, data)
    data.setdefault("claims", [])
    latest = _latest(data)
    added = []
    for claim in claims:
        entry = latest.get(claim.id)
        if entry and entry["fingerprint"] == claim.fingerprint:
            continue
        new = {"id": claim.id, "version": entry["version"] + 1 if entry else 1,
               "fingerprint": claim.fingerprint, "registered": today, "reason": reason}
        if entry and moved:
            new.update(same_rule_as=entry["version"], moved=True)
        elif entry and entry["fingerprint"] == claim.text_fingerprint:
            new["same_rule_as"] = entry.get("same_rule_as", entry["version"])
        _append(data, "claims", new)
        added.append(claim.id)
    if added:
        _write_register(study, data)
    return added


def rekey_earlier(study: str, claims: Sequence[Claim],
                  earlier: Mapping[str, Sequence[tuple[str, str]]], reason: str,
                  today: str) -> list[str]:
    """Record each earlier version a claim keeps in `previous` under the fingerprint it has
    now, where only code every rule shares moved it (the verdict order, the statistics, the
    fingerprint scheme): its words are unchanged, so it is found by its text fingerprint among
    `earlier` (claim id -> (fingerprint, text fingerprint) of the rule and the versions it
    kept, as the earlier code computed them, `values.earlier_prints`), whose fingerprint the
    register names as version N. The entry appended repeats N with `rekeyed: true`; it is
    never the latest version and is no rule of its own. Returns "id vN" for each."""
    reason = check_reason(reason)
    data = read_register(study)
    _intact(study, data)
    known = _versions(data)
    added = []
    for claim in claims:
        versions = known.get(claim.id, {})
        taken: set[int] = set()
        # the earlier code's kept versions first, then its rule, which a change may have
        # moved into previous: versions with the same words are matched in that order
        prints = [*earlier.get(claim.id, ())[1:], *earlier.get(claim.id, ())[:1]]
        for old in claim.previous:
            if old.fingerprint in versions:
                taken.add(versions[old.fingerprint])
                continue
            candidates = [versions[fp] for fp, words in prints
                          if words == old.text_fingerprint and fp in versions]
            number = next((n for n in candidates if n not in taken), None)
            if number is None:
                continue
            taken.add(number)
            _append(data, "claims", {"id": claim.id, "version": number,
                                     "fingerprint": old.fingerprint, "registered": today,
                                     "reason": reason, "rekeyed": True})
            versions[old.fingerprint] = number
            added.append(f"{claim.id} v{number}")
    if added:
        _write_register(study, data)
    return added


def judged_versions(study: str, data: Mapping | None = None) -> dict[tuple[str, int], str]:
    """(claim id, version) -> the seeds of a confirmatory run that judged that rule version:
    the current run (figures/<notebook>/claims.csv at the default scale) and every replaced
    one (register/earlier/), each version widened to the versions the register records as
    the same rule (`same_rule_as`)."""
    data = read_register(study) if data is None else data
    runs = [(data.get("seeds", []), paths.figures_dir(STUDIES.get(study, study),
                                                       DEFAULT_SCALE) / f"{CLAIMS_TABLE}.csv")]
    runs += [(r["seeds"], paths.repo_root() / r["verdicts"])
             for r in data.get("earlier_runs") or []]
    judged: dict[tuple[str, int], str] = {}
    for seeds, path in runs:
        if not path.exists():
            continue
        table = read_results(path)
        for claim_id, version in zip(table["id"], table.get("version", [""] * len(table)),
                                     strict=True):
            if not str(version).startswith("v"):
                continue
            number = int(str(version)[1:])
            for v in (number, *(w for w, _ in same_rule_chain(data, claim_id, number))):
                judged.setdefault((claim_id, v), seed_span(seeds))
    return judged


def new_confirmatory_run(study: str, seeds: Sequence[int], reason: str, today: str,
                         claims: Sequence[Claim] = (), replication: bool = False,
                         power: Mapping[str, str] | None = None) -> Path:
    """Replace the study's confirmatory seeds by fresh `seeds` for a new confirmatory run
    (the recipe changed, or the run was found unsound), keeping the replaced run visible:
    its verdicts and values (figures/<notebook>/claims.csv at the default scale) are frozen
    under register/earlier/ and listed with `reason` in the register's `earlier_runs`, which
    the report shows beside the new verdicts. Refused (ValueError) when a seed was used by an
    earlier run, the pilot or anything in the seed ledger, and, unless `replication`, when
    one of `claims` (the current rules) is a registered version some confirmatory run has
    already judged: running unchanged rules again and keeping the newest run is optional
    stopping. With the seeds it records Holm's family (`family_of`: every one of `claims`
    but those `power`, the power analysis's reasons, leaves out) and each rule's n. Returns
    the frozen file."""
    reason = check_reason(reason)
    data = read_register(study)
    _intact(study, data)
    notebook = STUDIES.get(study, study)
    used = {int(s) for run in data.get("earlier_runs") or [] for s in run["seeds"]}
    used |= {int(s) for s in [*data.get("seeds", []), *data.get("pilot_seeds", [])]}
    if not seeds or used & {int(s) for s in seeds}:
        raise ValueError(f"the new seeds must be fresh: {sorted(used & set(seeds))} were used")
    ledger = seed_ledger(study)
    found = sorted(int(s) for s in seeds if int(s) in ledger)
    if found:
        raise ValueError(f"the new seeds must be fresh: seed {found[0]} was used by "
                         f"{ledger[found[0]][0]} (register/{SEED_LEDGER})")
    if not replication:
        versions, judged = _versions(data), judged_versions(study, data)
        again = [f"{c.id} v{versions[c.id][c.fingerprint]} (seeds {judged[key]})"
                 for c in claims if c.fingerprint in versions.get(c.id, {})
                 for key in [(c.id, versions[c.id][c.fingerprint])] if key in judged]
        if again:
            raise ValueError(f"{len(again)} rule version(s) already had a confirmatory run, "
                             f"e.g. {again[0]}: a new run of unchanged rules is a replication "
                             "(--replication), shown beside the earlier runs, never in their "
                             "place")
    current = paths.figures_dir(notebook, DEFAULT_SCALE) / f"{CLAIMS_TABLE}.csv"
    if not current.exists():
        raise ValueError(f"no verdicts to keep: {current} is missing")
    old = [int(s) for s in data["seeds"]]
    frozen = register_path(study).parent / "earlier" / f"{notebook}-seeds-{seed_span(old)}.csv"
    table = read_results(current)
    kept = [c for c in ("id", "version", "verdict", "headline", "ours", "note", "p")
            if c in table]
    frozen.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(frozen, table[kept].to_csv(index=False).encode())
    run = {"seeds": old, "replaced": today, "reason": reason,
           "verdicts": frozen.relative_to(paths.repo_root()).as_posix()}
    for key, field in (("seeds_registered", "registered"), ("seeds_replication", "replication"),
                       ("planned_n", "planned_n"), ("family", "family"),
                       ("outside_family", "outside_family")):
        if key in data:
            run[field] = data.pop(key)
    _append(data, "earlier_runs", run)
    data["seeds"] = [int(s) for s in seeds]
    data["seeds_registered"] = today
    planned = {c.id: c.confirmatory_n for c in claims if c.confirmatory_n is not None}
    if planned:  # each rule's n from its power analysis, registered with the seeds
        data["planned_n"] = planned
    if claims:  # Holm's family, fixed before the run (`family_of`)
        data["family"], outside = family_of(claims, power or {})
        if outside:
            data["outside_family"] = outside
    if replication:
        data["seeds_replication"] = True
    _write_register(study, data)
    return frozen


def published_seeds(study: str, scale: str = DEFAULT_SCALE) -> list[int] | None:
    """The seeds the study's published run at `scale` ran: its manifest's `seeds` and the
    seed lists of its arms (the list parameters named `*_seeds`, as `config.ARM_SEEDS`
    names them; a count such as `sweep_seeds: 2` is not a list); None without a manifest
    or a recorded seed list."""
    manifest = paths.figures_dir(STUDIES.get(study, study), scale) / "manifest.json"
    try:
        parameters = json.loads(manifest.read_text(encoding="utf-8"))["parameters"]
        lists = [v for k, v in parameters.items()
                 if (k == "seeds" or k.endswith("_seeds")) and isinstance(v, list)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return [int(s) for seeds in lists for s in seeds] if "seeds" in parameters else None


def pending_seeds(study: str, data: Mapping | None = None) -> list[int]:
    """The registered confirmatory seeds when the published run at the default scale ran
    others: the rules and seeds are registered and the run has not happened yet (the
    registered report's first stage); [] when the published run is the registered one, or
    when nothing is published or no seeds are registered."""
    data = read_register(study, missing_ok=True) if data is None else data
    registered = [int(s) for s in data.get("seeds") or []]
    ran = published_seeds(study)
    return registered if registered and ran is not None and set(ran) != set(registered) \
        else []


def seed_span(seeds: Sequence[int]) -> str:
    """100-102 for consecutive seeds, else 100,105."""
    seeds = sorted(int(s) for s in seeds)
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 1:
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def read_results(path: Path) -> pd.DataFrame:
    """A claims table as the notebooks write it; DamagedFileError for a file that is not
    UTF-8 CSV with an id and a verdict on every row (a truncated or overwritten file)."""
    damaged = f"{_shown(path)} is damaged"
    try:
        table = pd.read_csv(path, keep_default_na=False, encoding="utf-8", dtype=str)
    except UnicodeDecodeError as err:
        raise DamagedFileError(f"{damaged}: not UTF-8 text (byte {err.start}); rerun its "
                               "notebook") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DamagedFileError(f"{damaged}: not a CSV table ({str(err).splitlines()[0]}); "
                               "rerun its notebook") from None
    # an empty field reads "", a missing one (a row cut short) NaN
    if (not {"id", "verdict"} <= set(table) or table.isna().any().any()
            or (table[["id", "verdict"]] == "").any().any()):
        raise DamagedFileError(f"{damaged}: a row is cut short or lacks its id or verdict "
                               "(a truncated file?); rerun its notebook")
    return table


def earlier_runs(register: dict) -> list[tuple[str, str, dict[str, str]]]:
    """Each confirmatory run a study's register (`read_register`) lists as replaced: (its
    seeds, why it was replaced, claim id -> verdict)."""
    out = []
    for run in register.get("earlier_runs") or []:
        path = paths.repo_root() / run["verdicts"]
        table = read_results(path) if path.exists() else None
        verdicts = {} if table is None else {
            i: f"{verdict} ({version})" for i, verdict, version
            in zip(table["id"], table["verdict"], table["version"], strict=True)}
        out.append((seed_span(run["seeds"]), run["reason"], verdicts))
    return out


def _version_of(versions: dict[str, int], *fingerprints: str) -> str:
    for fp in fingerprints:
        if fp in versions:
            return f"v{versions[fp]}"
    return "unregistered"


def with_versions(table: pd.DataFrame, study: str) -> pd.DataFrame:
    """Name each row's registered rule version ("v2") from the register; a rule whose
    fingerprint was never registered reads "unregistered", so an unrecorded change shows.
    Earlier versions are found by either fingerprint (one registered by its words only).
    Without a register every row reads "unregistered" (the report then refuses the study)."""
    data = read_register(study, missing_ok=True)
    known = _versions(data)
    table = table.copy()
    table["version"] = [_version_of(known.get(i, {}), fp)
                        for i, fp in zip(table["id"], table["fingerprint"])]

    def previous(row) -> str:
        pairs = [p.split("=", 1) for p in str(row["previous"]).split("; ") if "=" in p]
        shown = [f"{_version_of(known.get(row['id'], {}), *fps.split('/'))}: {v}"
                 for fps, v in pairs]
        version = row["version"][1:] if row["version"].startswith("v") else ""
        for earlier, moved in same_rule_chain(data, row["id"], int(version)) if version else ():
            how = "its code or values moved" if moved else "registered by its words only"
            shown.append(f"v{earlier}: the same rule, {how}; same verdict")
        return "; ".join(shown)

    table["previous"] = table.apply(previous, axis=1) if len(table) else []
    return table


def same_rule_chain(data: Mapping, claim_id: str, version: int) -> list[tuple[int, bool]]:
    """(earlier version, whether only its code's place changed) for each earlier version that
    the register records as this very rule, following `same_rule_as` back from `version`."""
    entries = {e["version"]: e for e in data.get("claims", [])
               if e["id"] == claim_id and not e.get("rekeyed")}
    chain, entry = [], entries.get(version)
    while entry is not None and "same_rule_as" in entry:
        chain.append((entry["same_rule_as"], bool(entry.get("moved"))))
        entry = entries.get(entry["same_rule_as"])
    return chain


def _versions(data: Mapping) -> dict[str, dict[str, int]]:
    versions: dict[str, dict[str, int]] = {}
    for entry in data.get("claims", []):
        versions.setdefault(entry["id"], {})[entry["fingerprint"]] = entry["version"]
    return versions


def check(table: pd.DataFrame, study: str, code: Mapping[str, str] | None = None) -> list[str]:
    """Each row's standing in the register, comparing its fingerprint in the results, in the
    register and (when given: claim id -> fingerprint) in the code: "" when they agree,
    else "unregistered" or "changed since registration: ..." saying which differs."""
    data = read_register(study)
    known, latest = _versions(data), _latest(data)
    out = []
    for claim_id, result_fp in zip(table["id"], table["fingerprint"]):
        versions = known.get(claim_id, {})
        now = (code or {}).get(claim_id)
        if not versions:
            out.append("unregistered")
        elif result_fp not in versions:
            out.append(f"changed since registration: the results' rule {result_fp} is not in "
                       f"the register (latest v{latest[claim_id]['version']})")
        elif now is not None and now != result_fp:
            where = f"v{versions[now]}" if now in versions else "unregistered"
            out.append(f"changed since registration: the code's rule ({where}) differs from "
                       "the one that decided these results; rerun the notebook")
        elif versions[result_fp] != latest[claim_id]["version"]:
            out.append(f"changed since registration: results from v{versions[result_fp]}, the "
                       f"register's latest is v{latest[claim_id]['version']}")
        else:
            out.append("")
    return out


POWER_RUN = "{notebook}_power_run.csv"  # pilots/: each rule's n and power, by pilots/power.py


def planned_power(study: str) -> dict[str, str]:
    """claim id -> why the power analysis leaves it out of Holm's family ("cannot be decided
    at n = 10: power 32%", "not run at this scale"), from its `family` column
    (pilots/<notebook>_power_run.csv, written by pilots/power.py); empty without that file
    or column: then every rule stays in."""
    path = paths.repo_root() / "pilots" / POWER_RUN.format(notebook=STUDIES.get(study, study))
    if not path.exists():
        return {}
    table = pd.read_csv(path, keep_default_na=False, encoding="utf-8", dtype=str)
    if not {"rule", "family"} <= set(table):
        return {}
    return {r: f for r, f in zip(table["rule"], table["family"], strict=True)
            if f.strip() and f.strip() != IN_FAMILY}


def family_of(claims: Sequence[Claim], left_out: Mapping[str, str]
              ) -> tuple[list[str], dict[str, str]]:
    """Holm's family fixed at registration: the ids of every rule the study registers at
    this scale but those the power analysis leaves out (claim id -> why: it cannot be decided
    at its planned n, power below half at its smallest effect, or it does not run here), and
    those left out with their reason. A row in the family stays in it whatever its run
    gives: one that fails a precondition counts as p = 1."""
    outside = {c.id: str(left_out[c.id]) for c in claims if c.id in left_out}
    return [c.id for c in claims if c.id not in outside], outside


def _p(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def with_family(table: pd.DataFrame, data: Mapping, p: Sequence[float] | None = None
                ) -> pd.DataFrame:
    """The table's Holm columns over the family its register fixed (`family_of`): `p_holm`
    and `holm` over every row of the family (one without a p, and a registered member the
    table lacks, as p = 1), and for a row left out of it, `holm` saying why ("outside the
    family: cannot be decided at n = 10: power 32%") and no `p_holm`. `p`: the rows'
    unrounded p (else the table's, as printed). A register that records no family leaves
    the table as it is (every tested row its family, as `evaluate` computed)."""
    from memlib.claims.rules import holm_adjusted, holm_verdicts

    family = data.get("family")
    if family is None or not len(table):
        return table
    table = table.copy()
    p = [_p(q) for q in table["p"]] if p is None else list(p)
    members = [i in family for i in table["id"]]
    absent = len(set(family) - set(table["id"]))
    adjusted = holm_adjusted(p, members, absent)
    table["p_holm"] = ["" if math.isnan(q) or math.isnan(own) else f"{q:.3g}"
                       for q, own in zip(adjusted, p, strict=True)]
    holm = holm_verdicts(list(table["verdict"]), p, members, absent)
    outside = data.get("outside_family") or {}
    table["holm"] = [h if inside else f"{OUTSIDE}: {outside.get(i, UNPLANNED)}"
                     for h, inside, i in zip(holm, members, table["id"], strict=True)]
    return table


OUTSIDE = "outside the family"
UNPLANNED = "registered after the family was fixed"


def write(table: pd.DataFrame, study: str, scale: str = DEFAULT_SCALE) -> None:
    """claims.csv (and .md, its long cells folded) with each row's registered version, and
    beside it each row's measured value as `evaluate` kept it (claims_values.json), which
    `register --moved` evaluates the old and the new rules on. Where the register fixed
    Holm's family (at the default scale), the table's Holm columns are recomputed over it
    (`with_family`), in `table` too, so the notebook shows what the file holds."""
    if scale == DEFAULT_SCALE:
        data = read_register(study, missing_ok=True)
        if data.get("family") is not None:
            fixed = with_family(table, data, table.attrs.get("p"))
            table["p_holm"], table["holm"] = fixed["p_holm"], fixed["holm"]
    measured = table.attrs.get("measured")
    save_table(with_versions(table, study), CLAIMS_TABLE, study, scale, readable=True)
    if measured is not None:
        write_values(measured, study, scale)
