"""The scan record (the scans row): its settings, the checks of a resume, the budget's changes, the listing.

A resumed scan asks the same questions of the same model: `probe scan --scan-id ID` (or probe.scan(scan_id=ID))
alone takes every setting from the record, and a setting given that differs is refused by name, except the
budget, which limits what is asked from now on; each change of it is kept in config_json (`budget_changes`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

from probe.answering import runs
from probe.common.errors import UserError
from probe.common.redact import MASK
from probe.common.version import __version__
from probe.common.vocabulary import RUNNING
from probe.dataset.prompts import template_hash
from probe.scanning.setup import BACKEND_FIELDS, SCAN_RUN_FIELDS, ScanSettings, read_scan_config, soc_prefixes
from probe.store import db
from probe.store.config import RUN_ID, load_config
from probe.store.db import DEFAULT_DB
from probe.store.spec import RunSpec

if TYPE_CHECKING:
    from probe.backends.base import Backend


def new_scan_id() -> str:
    return f"scan-{runs.new_run_id()}"


def scan_config(config: RunSpec, settings: ScanSettings) -> dict[str, object]:
    """scans.config_json: the backend's settings and the scan's."""
    flat = config.flat()
    return {**{name: flat[name] for name in BACKEND_FIELDS}, **settings.stored()}


def record(
    con: duckdb.DuckDBPyConnection,
    scan_id: str,
    config: RunSpec,
    settings: ScanSettings,
    backend: Backend,
    identity: str,
    titles: pd.DataFrame,
    pairs: pd.DataFrame,
) -> None:
    """The scans row (never a key: config.settings() masks --base-url), its titles and its pair order."""
    stored_config = scan_config(config, settings)
    if config.backend.base_url:
        stored_config["base_url"] = config.settings()["base_url"]
    with db.transaction(con):
        con.execute(
            "INSERT INTO scans VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, NULL)",
            [
                scan_id,
                str(backend.identity().get("model") or config.backend.model or ""),
                config.backend.kind,
                json.dumps(stored_config),
                identity,
                template_hash(),
                __version__,
                RUNNING,
            ],
        )
        db.insert_frame(con, "scan_titles", titles.assign(scan_id=scan_id))
        db.insert_frame(con, "scan_pairs", pairs[["position", "pair_id", "female", "male"]].assign(scan_id=scan_id))


def stored_scan(con: duckdb.DuckDBPyConnection, scan_id: str) -> dict[str, object] | None:
    frame = con.execute("SELECT * FROM scans WHERE scan_id = ?", [scan_id]).df()
    return None if frame.empty else frame.iloc[0].to_dict()


def stored_settings(stored: dict[str, object]) -> tuple[dict[str, object], ScanSettings]:
    """A stored scan's backend flags and scan settings, so `probe scan --scan-id ID` alone resumes it."""
    values = json.loads(str(stored["config_json"]))
    scan_fields = ScanSettings.__dataclass_fields__
    settings = {name: values[name] for name in scan_fields}
    for name in ("soc", "pairs"):
        if isinstance(settings[name], list):
            settings[name] = tuple(settings[name])
    return {name: values[name] for name in BACKEND_FIELDS}, ScanSettings(**settings)


def check_scan_id(scan_id: object) -> None:
    """A scan id names the report's folder: the run id's characters only."""
    if scan_id is not None and not (isinstance(scan_id, str) and RUN_ID.fullmatch(scan_id)):
        raise UserError(
            f"--scan-id {scan_id!r}: letters, digits, '.', '_', '-', starting with a letter or digit, at most 64 "
            "(it names the report's folder)"
        )


def with_stored(
    database: str, scan_id: str | None, backend_given: Mapping[str, object], scan_given: Mapping[str, object]
) -> tuple[dict[str, object], dict[str, object]]:
    """The settings given, and for a stored scan (`scan_id` names one) its stored settings where none is given:
    backend settings (BACKEND_FIELDS) and scan settings (ScanSettings' fields)."""
    if scan_id is None or not Path(database).exists():
        return dict(backend_given), dict(scan_given)
    con = db.connect(database, read_only=True)
    try:
        stored = stored_scan(con, scan_id)
    finally:
        con.close()
    if stored is None:
        return dict(backend_given), dict(scan_given)
    stored_backend, stored_scan_settings = stored_settings(stored)
    if backend_given.get("base_url") is None and MASK in str(stored_backend.get("base_url") or ""):
        raise UserError(
            f"--scan-id {scan_id}: the scan's --base-url held credentials or query values, which are never "
            "stored; give --base-url again to resume it"
        )
    return {**stored_backend, **backend_given}, {**asdict(stored_scan_settings), **scan_given}


def resolve_settings(
    given: Mapping[str, object], scan_id: str | None, config_file: Path | None = None
) -> tuple[RunSpec, ScanSettings]:
    """A scan's settings, resolved once for `probe scan`'s flags and probe.scan()'s keywords (RUN.toml keys; a key
    left out is not given, `budget=None` given is no limit): over a `--config` file's, a stored scan's where none is
    given (with_stored), then the defaults."""
    scan_fields = tuple(ScanSettings.__dataclass_fields__)
    unknown = sorted(set(given) - {*BACKEND_FIELDS, *scan_fields, *SCAN_RUN_FIELDS})
    if unknown:
        raise UserError(
            f"{unknown[0]}: not a setting of a scan (the backend's: {', '.join(BACKEND_FIELDS)}; the scan's: "
            f"{', '.join(scan_fields)}; {', '.join(SCAN_RUN_FIELDS)})"
        )
    values = {**(read_scan_config(config_file) if config_file is not None else {}), **given}
    database = str(values.get("db") or DEFAULT_DB)
    backend_values, scan_values = with_stored(
        database,
        scan_id,
        {name: value for name, value in values.items() if name in BACKEND_FIELDS},
        {name: value for name, value in values.items() if name in scan_fields},
    )
    run_values = {name: value for name, value in values.items() if name in SCAN_RUN_FIELDS}
    config = load_config({**backend_values, **run_values, "db": database})
    scan_values["soc"] = soc_prefixes(scan_values.get("soc"))  # "29,31" (--soc) or a sequence
    for name in ("occupations", "names"):  # paths
        if isinstance(scan_values.get(name), Path):
            scan_values[name] = str(scan_values[name])
    if isinstance(scan_values.get("pairs"), list):
        scan_values["pairs"] = tuple(scan_values["pairs"])
    return config, ScanSettings(**scan_values)


def check_same(
    scan_id: str,
    stored: dict[str, object],
    config: RunSpec,
    settings: ScanSettings,
    identity: str | None,
    *,
    asks: bool = True,
) -> None:
    """A resumed scan asks the same questions of the same model (identity None: not loaded), or says which
    setting differs. The wording matters only if it `asks`: a finished scan's report is rewritten under any."""
    if asks and stored["template_hash"] != template_hash():
        raise UserError(f"--scan-id {scan_id}: the prompt templates changed since the scan started; start a new scan")
    before = json.loads(str(stored["config_json"]))
    for name, value in scan_config(config, settings).items():
        # The budget limits what is asked from now on (probe/scanning/rounds.py); a URL is stored masked.
        if before.get(name) != value and name not in ("budget", "base_url"):
            raise UserError(
                f"--{name.replace('_', '-')}: scan {scan_id} was started with {before.get(name)!r}, not {value!r}"
            )
    if identity is not None:
        runs.check_same_backend(scan_id, json.loads(str(stored["backend_json"])), json.loads(identity))


def mark_resumed(con: duckdb.DuckDBPyConnection, scan_id: str, stored: dict[str, object], budget: int | None) -> None:
    """The scan runs again, under `budget`; a changed budget is appended to config_json's `budget_changes`
    with the calls made before it."""
    values = json.loads(str(stored["config_json"]))
    if values.get("budget") != budget:
        calls = con.execute("SELECT count(*) FROM items WHERE run_id = ?", [scan_id]).fetchone()[0]
        change = {"from": values.get("budget"), "to": budget, "after_calls": int(calls)}
        values["budget_changes"] = [*values.get("budget_changes", []), change]
        values["budget"] = budget
    con.execute(
        "UPDATE scans SET config_json = ?, status = ? WHERE scan_id = ?", [json.dumps(values), RUNNING, scan_id]
    )


def list_scans(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per scan, newest first: id, status, model, backend, created, titles, calls (items asked),
    flagged (NULL before its results exist)."""
    return con.execute(
        """SELECT s.scan_id, s.status, s.model, s.backend, s.created_at,
                  (SELECT count(*) FROM scan_titles t WHERE t.scan_id = s.scan_id) AS titles,
                  (SELECT count(*) FROM items i WHERE i.run_id = s.scan_id) AS calls,
                  (SELECT CASE WHEN count(*) > 0 THEN count(*) FILTER (WHERE r.flagged) END
                   FROM scan_results r WHERE r.scan_id = s.scan_id) AS flagged
           FROM scans s ORDER BY s.created_at DESC, s.scan_id"""
    ).df()
