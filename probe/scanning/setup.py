"""What a scan asks about, from its settings: the titles, the name pairs in their order, its size before it starts.

Titles are O*NET-SOC codes with their titles (all 1,016 by default, or a CSV's codes, within SOC code
prefixes); a title needs no attribute ratings, since the scan's question states none. The name pairs are
asked of every title in one order, shuffled by a seed (probe/analysis/scan_rules.py says why one order for all).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from probe.analysis.scan_rules import CALLS_PER_PAIR, depth_schedule
from probe.common.errors import UserError
from probe.common.staging import stage_file
from probe.store import db
from probe.store.config import read_study, read_toml
from probe.store.spec import RunSpec
from probe.taxonomy import name_pairs

# RunSpec settings a scan uses (the backend's and where it runs); the rest describe a two-stage run.
BACKEND_FIELDS = (
    "backend",
    "model",
    "base_url",
    "answers",
    "device",
    "dtype",
    "decoding",
    "api_mode",
    "constrain",
    "max_tokens",
    "timeout",
    "max_retries",
    "backoff",
)
# The backend's settings `probe run` has no flag for: a confirmation run reads them from the scan's backend.toml.
FILE_ONLY_BACKEND_FIELDS = ("api_mode", "constrain", "max_tokens", "timeout", "max_retries", "backoff")
# RunSpec settings besides the backend's that say how a scan runs: where it is stored, the machine, the failure limit.
SCAN_RUN_FIELDS = ("db", "threads", "concurrency", "batch_size", "no_cache", "quiet", "max_failed_share")
TYPICAL_CALLS_PER_TITLE = 12  # mean calls a title over bench/scan.py's simulated scans (BENCHMARKS.md)


def read_scan_config(path: Path) -> dict[str, object]:
    """A RUN.toml's settings for `probe scan --config`: the backend's (BACKEND_FIELDS) and how the scan runs
    (SCAN_RUN_FIELDS). A two-stage run's design (pairs, occupations, top_k, a system prompt, ...) is refused by name,
    not left unread: the scan's own design is its flags, and it asks without a system prompt."""
    values = read_toml(path)
    if read_study(path) != (None, []):
        raise UserError(f"--config {path}: [study] asks several models; a scan asks one (run one scan per model)")
    other = sorted(set(values) - {*BACKEND_FIELDS, *SCAN_RUN_FIELDS})
    if other and other[0] in ScanSettings.__dataclass_fields__:
        raise UserError(f"--config {path}: {other[0]}: give a scan's {other[0]} as `probe scan --{other[0]}`")
    if other:
        raise UserError(
            f"--config {path}: {other[0]} is a two-stage run's setting, not a scan's (a scan takes the "
            f"backend's: {', '.join(BACKEND_FIELDS)}; and {', '.join(SCAN_RUN_FIELDS)})"
        )
    return values


@dataclass(frozen=True)
class ScanSettings:
    """What a scan asks about, besides the backend: titles, name pairs, budget, pair order seed."""

    occupations: str = "all"  # all, or a CSV with a soc_code column
    soc: tuple[str, ...] = ()  # SOC code prefixes (major group "29", minor "29-1", ...); empty = any
    pairs: int | tuple[int, ...] | None = None  # first N name pairs or these ids; None = all
    names: str | None = None  # CSV of name pairs instead of the shipped ones
    budget: int | None = None  # most model calls; None = as many as the rounds need
    seed: int = 0  # shuffles the pair order

    def __post_init__(self) -> None:
        if not _whole(self.seed, least=0):  # numpy's generators take no negative seed
            raise UserError(f"--seed {self.seed!r}: a seed is a whole number from 0 up")
        if self.budget is not None and not _whole(self.budget, least=1):
            raise UserError(f"--budget {self.budget!r}: a number of model calls from 1 up")

    def stored(self) -> dict[str, object]:
        return json.loads(json.dumps(asdict(self)))


def _whole(value: object, *, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def soc_prefixes(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """--soc's SOC code prefixes: a comma list ("29,31-1") or a sequence of them; each digits, '-' and '.'."""
    parts = value.split(",") if isinstance(value, str) else list(value or ())
    prefixes = tuple(str(part).strip() for part in parts if str(part).strip())
    if isinstance(value, str) and value.strip() and not prefixes:  # "," would scan every title
        raise UserError(f"--soc {value!r}: no SOC code prefix in it (e.g. 29 or 29-1)")
    for prefix in prefixes:
        if not all(character.isdigit() or character in "-." for character in prefix):
            raise UserError(f"--soc {prefix!r}: a SOC code prefix is digits, '-' and '.' (e.g. 29 or 29-1)")
    return prefixes


# --- titles and pairs ----------------------------------------------------------------------------------


def resolve_titles(con: duckdb.DuckDBPyConnection, settings: ScanSettings) -> pd.DataFrame:
    """The titles to scan (soc_code, title), by code: all O*NET titles or a CSV's, within the SOC prefixes."""
    every = con.execute("SELECT soc_code, title FROM onet_occupations ORDER BY soc_code").df()
    if settings.occupations != "all":
        path = Path(settings.occupations)
        if not path.is_file():
            raise UserError(f"--occupations {settings.occupations!r}: neither 'all' nor a CSV file")
        stage_file(con, path, "_scan_codes", {"soc_code": "soc_code"}, delimiter=",", label=str(path))
        try:
            rows = con.execute("SELECT line, trim(soc_code) FROM _scan_codes ORDER BY line").fetchall()
        finally:
            con.execute("DROP TABLE IF EXISTS _scan_codes")
        known = set(every["soc_code"])
        for line, code in rows:
            if not code:
                raise UserError(f"{path} line {line}: no soc_code (an empty row?)")
            if code not in known:
                raise UserError(f"{path} line {line}: {code!r} is not an O*NET-SOC code of this database")
        every = every[every["soc_code"].isin([code for _, code in rows])]
    if settings.soc:
        every = every[every["soc_code"].map(lambda code: code.startswith(settings.soc))]
        if every.empty:
            raise UserError(f"--soc {','.join(settings.soc)}: no O*NET title has a code starting so")
    twice = every[every["title"].duplicated(keep=False)]
    if not twice.empty:  # the scan's items are keyed by the title's text: two codes would ask one question
        title = twice["title"].iloc[0]
        codes = " and ".join(twice.loc[twice["title"] == title, "soc_code"])
        raise UserError(
            f"O*NET-SOC codes {codes} share the title {title!r}: the scan asks by title, so leave one out "
            "(--occupations CSV or --soc)"
        )
    return every.reset_index(drop=True)


def shuffled_pairs(con: duckdb.DuckDBPyConnection, settings: ScanSettings) -> pd.DataFrame:
    """The name pairs in the order every title is asked them (position 1 first), shuffled by the seed."""
    pairs = name_pairs.select_name_pairs(con, settings.pairs, settings.names)
    order = np.random.default_rng(settings.seed).permutation(len(pairs))
    shuffled = pairs.iloc[order].reset_index(drop=True)
    return shuffled.assign(position=np.arange(1, len(shuffled) + 1))


@dataclass(frozen=True)
class Estimate:
    """What a scan will ask, before it starts (`probe scan --dry-run`)."""

    titles: int
    pairs: int
    depths: list[int]
    first_round: int  # model calls of round 1
    most: int  # every title asked every pair, or the budget
    typical: int


def estimate(config: RunSpec, settings: ScanSettings) -> Estimate:
    """The scan's size from the taxonomy alone; reads the database (or a fresh in-memory one), writes nothing."""
    existing = Path(config.options.db).exists()
    con = db.connect(config.options.db, read_only=True) if existing else db.connect(":memory:")
    try:
        titles = len(resolve_titles(con, settings))
        pairs = len(name_pairs.select_name_pairs(con, settings.pairs, settings.names))
    finally:
        con.close()
    depths = depth_schedule(pairs)
    cap = settings.budget if settings.budget is not None else titles * pairs * CALLS_PER_PAIR
    most = min(titles * pairs * CALLS_PER_PAIR, cap)
    first = min(titles * depths[0] * CALLS_PER_PAIR, most)
    return Estimate(titles, pairs, depths, first, most, min(titles * TYPICAL_CALLS_PER_TITLE, most))
