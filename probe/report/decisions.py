"""report.json of an imported decisions run (probe/answering/decisions.py): what the data is and where it came
from, its people, sets and jobs, and the adverse-impact section; report.html and report.md render it with the
decisions templates (probe/report/render.py)."""

from __future__ import annotations

import json
from typing import Any

import duckdb

from probe.report.data import SCHEMA_VERSION, run_record
from probe.report.impact import adverse_impact_section

WHAT = (
    "Imported decisions, not probed: the selections, rankings or scores someone else made (a screening tool, a "
    "vendor, a published study), read from the source below. Nothing here was asked of a model by this tool."
)
OUTCOMES = {"selected": "selected (0/1)", "rank": "rank (1 = top): selected = ranked first"}


def decisions_summary(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """The document of a decisions run."""
    config = json.loads(con.execute("SELECT config_json FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
    people, sets, missing = con.execute(
        "SELECT count(*), count(DISTINCT p.set_id), count(*) FILTER (WHERE d.selected IS NULL) FROM run_people p "
        "JOIN run_decisions d USING (run_id, person_id) WHERE p.run_id = ?",
        [run_id],
    ).fetchone()
    jobs = [
        row[0]
        for row in con.execute(
            "SELECT DISTINCT job FROM run_decisions WHERE run_id = ? AND job IS NOT NULL ORDER BY job", [run_id]
        ).fetchall()
    ]
    facts = {
        "what": WHAT,
        "source": config.get("decisions"),
        "period": config.get("period"),
        "outcome": OUTCOMES.get(config.get("outcome"), config.get("outcome")),
        "attributes": config.get("attributes", []),
        "people": people,
        "sets": sets,
        "unknown_decisions": missing,
        "jobs": jobs,
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "run": run_record(con, run_id),
        "decisions": facts,
        "adverse_impact": adverse_impact_section(con, run_id),
    }
