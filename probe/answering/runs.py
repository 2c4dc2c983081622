"""The run record: one `runs` row per run (settings, templates, versions, backend identity, status).

A resumed run is checked against its record here, so it asks the same questions of the same model.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import duckdb
import pandas as pd

from probe.backends import BACKENDS
from probe.backends.base import Backend
from probe.common.errors import RunInterrupted, UserError
from probe.common.escape import valid_unicode
from probe.common.redact import MASK, scrub
from probe.common.version import __version__
from probe.common.vocabulary import COMPLETE, FAILED, INTERRUPTED, RUN_STATUSES, RUNNING
from probe.dataset.prompts import template_hash
from probe.store import db
from probe.store.config import PRESETS
from probe.store.spec import OPERATIONAL_FIELDS
from probe.taxonomy.selection import Selection

# The packages every run uses; each backend's engine packages (its registry line) are recorded beside them.
CORE_PACKAGES = ("duckdb", "jinja2", "pandas")


# Settings of the place a run is resumed from, not of the run: taken from the command, never from the record.
_LOCAL_SETTINGS = ("db", "quiet", "run_id")


def new_run_id() -> str:
    """Sortable by start time, unique enough for one database: 20261123-093012-a1b2c3."""
    return f"{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def identity_json(backend: Backend) -> str:
    """The backend's identity as stored in runs.backend_json and hashed into cache keys."""
    return json.dumps(backend.identity(), sort_keys=True, default=str)


def stored_run(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, object] | None:
    frame = con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id]).df()
    return None if frame.empty else frame.iloc[0].to_dict()


def check_same_settings(settings: dict[str, object], stored: dict[str, object]) -> None:
    """A resumed run must ask the same questions: name the first of its `settings` (RunSpec.settings) that differs,
    but for the operational ones (OPERATIONAL_FIELDS: how a run proceeds, not its answers)."""
    if stored["template_hash"] != template_hash():
        raise UserError(
            f"--run-id {stored['run_id']}: the prompt templates changed since the run started; start a new run"
        )
    before = json.loads(str(stored["config_json"]))
    for name, value in settings.items():
        if name not in OPERATIONAL_FIELDS and before.get(name) != value:
            flag = f"--{name.replace('_', '-')}"
            started = f"without {flag} (its default)" if before.get(name) is None else f"with {before[name]!r}"
            now = "without it" if value is None else repr(value)
            raise UserError(
                f"{flag}: run {stored['run_id']} was started {started}, not {now}; resume it with the same settings "
                "or choose another --run-id"
            )


def check_same_backend(run_id: str, before: dict[str, object], now: dict[str, object]) -> None:
    for key in sorted(set(before) | set(now)):
        if before.get(key) != now.get(key):
            raise UserError(
                f"--run-id {run_id}: the backend's {key} was {before.get(key)!r}, now {now.get(key)!r}; "
                "a run is answered by one model with one set of decoding settings"
            )


def package_versions() -> dict[str, str]:
    versions = {"taxonomy-probe": __version__}
    engines = (package for info in BACKENDS.values() for package in info.engine_packages)
    for name in dict.fromkeys((*CORE_PACKAGES, *engines)):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            continue
    return versions


def record_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    settings: dict[str, object],
    backend: Backend,
    identity: str,
    selection: Selection,
) -> None:
    """The runs row (its `settings` as RunSpec.settings writes them, templates, versions, backend identity; never a
    key), frozen pairs and attributes."""
    model = json.loads(identity).get("model") or settings["model"] or ""
    release = con.execute("SELECT release FROM onet_release ORDER BY imported_at DESC LIMIT 1").fetchone()
    with db.transaction(con):
        con.execute(
            "INSERT INTO runs (run_id, created_at, model, backend, config_json, status, template_hash, "
            "package_version, backend_json, versions_json, onet_release) "
            "VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                str(model),
                settings["backend"],
                json.dumps({**settings, "run_id": run_id}),
                RUNNING,
                template_hash(),
                __version__,
                identity,
                json.dumps(package_versions()),
                release[0] if release else None,
            ],
        )
        db.insert_frame(con, "run_attributes", selection.attributes.assign(run_id=run_id))
        db.insert_frame(con, "run_name_pairs", selection.pairs[["pair_id", "female", "male"]].assign(run_id=run_id))
        for table, frame in (
            ("run_contests", selection.contests),
            ("run_people", selection.people),
            ("run_person_categories", selection.person_categories),
        ):
            if frame is not None:
                db.insert_frame(con, table, frame.assign(run_id=run_id))


def record_served_models(con: duckdb.DuckDBPyConnection, run_id: str, backend: Backend) -> None:
    """runs.served_model: the model names the server replied with, for backends that report them (openai)."""
    served = getattr(backend, "served_models", None)
    names = sorted(served()) if served else []
    if names:
        text = valid_unicode(scrub(", ".join(names)))
        con.execute("UPDATE runs SET served_model = ? WHERE run_id = ?", [text, run_id])


def set_status(con: duckdb.DuckDBPyConnection, record_id: str, status: str, table: str = "runs") -> None:
    """Write one of RUN_STATUSES to a run (or, with `table="scans"`, a scan); a complete one gets its finishing
    time."""
    if status not in RUN_STATUSES:
        raise ValueError(f"run status {status!r} is not one of {RUN_STATUSES}")
    column = {"runs": "run_id", "scans": "scan_id"}[table]
    finished = "now()" if status == COMPLETE else "NULL"
    con.execute(f"UPDATE {table} SET status = ?, finished_at = {finished} WHERE {column} = ?", [status, record_id])


def check_id_free(con: duckdb.DuckDBPyConnection, record_id: str, option: str, other: str) -> None:
    """Runs and scans share one id space (a scan's items and answers are stored under its id): a new run may not
    take a scan's id (`other` = "scans") nor a new scan a run's ("runs"). `option` names the flag it came from."""
    column, kind = {"runs": ("run_id", "a run"), "scans": ("scan_id", "a scan")}[other]
    if con.execute(f"SELECT 1 FROM {other} WHERE {column} = ?", [record_id]).fetchone():
        raise UserError(f"{option} {record_id}: {kind} has this id; choose another")


@contextmanager
def lifecycle(set_status: Callable[[str], None], on_exit: Callable[[], None] | None = None) -> Iterator[None]:
    """The one lifecycle of a stored run or scan: running while the body asks, then interrupted (Ctrl-C, a stop
    signal) or failed (anything else) when it raises. `on_exit` runs first either way (e.g. the served models
    recorded). The body marks the record complete itself, in the transaction that stores its last results."""
    set_status(RUNNING)
    try:
        yield
    except BaseException as exc:
        if on_exit is not None:
            on_exit()
        set_status(INTERRUPTED if isinstance(exc, KeyboardInterrupt | RunInterrupted) else FAILED)
        raise
    if on_exit is not None:
        on_exit()


@contextmanager
def running(con: duckdb.DuckDBPyConnection, run_id: str, backend: Backend) -> Iterator[None]:
    """A run's `lifecycle`: its served models recorded when the body ends either way, then complete where the body
    returned."""
    with lifecycle(lambda status: set_status(con, run_id, status), lambda: record_served_models(con, run_id, backend)):
        yield
    set_status(con, run_id, COMPLETE)


def stored_settings(
    con: duckdb.DuckDBPyConnection, run_id: str, given_base_url: str | None = None
) -> dict[str, object] | None:
    """The settings a run was started with (RUN.toml keys), so `probe run --run-id ID` alone resumes it.

    A stored --base-url with masked credentials cannot be used: the URL given again (`given_base_url`) takes
    its place (check_same_settings then compares the two masked).
    """
    row = con.execute("SELECT config_json FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        return None
    settings = {key: value for key, value in json.loads(row[0]).items() if key not in _LOCAL_SETTINGS}
    if MASK in str(settings.get("base_url") or ""):
        if given_base_url:
            del settings["base_url"]
            return settings
        raise UserError(
            f"--run-id {run_id}: the run's --base-url held credentials or query values, which are never stored; "
            "give --base-url again to resume it"
        )
    return settings


def preset_label(settings: dict[str, object]) -> str | None:
    """The preset a run is listed under: its name where the run asked what the preset asks, "<name> (modified)"
    where a flag changed one of the preset's settings (`--preset quick --pairs 6`), None without a preset."""
    preset = settings.get("preset")
    if preset is None:
        return None
    asked = PRESETS.get(str(preset), {})
    same = all(json.loads(json.dumps(value)) == settings.get(key) for key, value in asked.items())
    return str(preset) if same else f"{preset} (modified)"


def list_runs(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per run, newest first, a study's runs together (placed by its newest run, oldest run first):
    id, created, model, backend, preset (`preset_label`), answered, items, stage, status, study.

    `answered` counts items with an answer that is not a stored failure (an imported decisions run: its people
    with a decision, of `items` people). `stage` is the last stage built:
    stage 2 is built from stage 1's answers, so before it exists `items` counts stage 1 only.
    """
    frame = con.execute(
        """SELECT r.run_id, r.created_at, r.model, r.backend, r.config_json AS preset,
                  coalesce(i.answered, d.decided, 0) AS answered, coalesce(i.items, d.people, 0) AS items,
                  coalesce(i.stage, 0) AS stage, r.status,
                  json_extract_string(r.config_json, '$.study') AS study
           FROM runs r LEFT JOIN (
               SELECT i.run_id, count(*) AS items, max(i.stage) AS stage,
                      count(a.item_id) FILTER (WHERE a.error IS NULL) AS answered
               FROM items i LEFT JOIN answers a USING (run_id, item_id) GROUP BY i.run_id
           ) i USING (run_id) LEFT JOIN (
               SELECT run_id, count(*) AS people, count(selected) AS decided FROM run_decisions GROUP BY run_id
           ) d USING (run_id)
           ORDER BY max(r.created_at) OVER (PARTITION BY coalesce(study, r.run_id)) DESC, study,
                    CASE WHEN study IS NULL THEN 0 ELSE epoch(r.created_at) END, r.run_id"""
    ).df()
    labels = [preset_label(json.loads(settings)) if isinstance(settings, str) else None for settings in frame["preset"]]
    return frame.assign(preset=pd.Series(labels, index=frame.index, dtype=object))


def study_run_ids(db_path: Path | str, study: str) -> list[str]:
    """The stored runs of `study`, oldest first."""
    if not Path(db_path).exists():
        return []
    con = db.connect(db_path, read_only=True)
    try:
        rows = con.execute(
            "SELECT run_id FROM runs WHERE json_extract_string(config_json, '$.study') = ? ORDER BY created_at, run_id",
            [study],
        ).fetchall()
    finally:
        con.close()
    return [run_id for (run_id,) in rows]
