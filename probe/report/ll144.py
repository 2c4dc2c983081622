"""`probe export RUN --format ll144`: the summary of results New York City's bias-audit rules lay out (6 RCNY 5-301)
as ll144.csv, ll144.md and ll144.html (DESIGN.md section 11).

Per attribute (sex, race/ethnicity, their intersection) and category: the number of applicants (people, not answers
or decisions), the selection or scoring rate, the impact ratio to the highest rate with our 95% interval and p
(probe/analysis/impact.py, the set as the unit), the decisions missing (`unknown`), and whether the category is under
2% of the applicants: such a category is shown with its count and rate but left out of the ratios (6 RCNY 5-301
allows it when stated), so the ratios and their intervals are those of the other categories alone. People without
a category for the attribute are one row `unknown` (count and rate; no ratio), as the rules ask them disclosed.
Every row carries the data's source and period. A probed run's summary states the probe's own definitions: its
applicants are the names shown, standing for perceived groups.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import duckdb
import pandas as pd

from probe.analysis.impact import GROUP_COLUMNS, group_ratios
from probe.analysis.stored import stored_counts
from probe.common.errors import UserError
from probe.common.escape import atomic_path, csv_safe, markdown_text, page_text, write_atomic
from probe.common.vocabulary import CONDITIONS, DECISIONS_BACKEND, DECISIONS_CONDITION, UNKNOWN
from probe.report.formatting import MISSING
from probe.report.impact import MEANING, SMALL_CATEGORY
from probe.store import db

LL144_COLUMNS = [
    "attribute",
    "category",
    "applicants",
    "rate_kind",
    "rate",
    "impact_ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "excluded_under_2pct",
    "unknown",
    "source",
    "period",
]
DECISIONS_DEFINITIONS = (
    "Applicants are the people in the imported decisions file, each counted once per set they appear in; the "
    "selection rate is the share selected (or ranked first) among those with a decision, the scoring rate the share "
    "scoring above the median score of everyone scored; the impact ratio is a category's rate over the highest rate "
    "among the categories not excluded; unknown counts decisions missing. Intervals: 95%, with the set (the people "
    "one decision was about) as the unit, clustered by name too where names recur."
)
PROBED_DEFINITIONS = (
    "This summary is of a probe of a language model, not of hiring decisions. Applicants are the names the probe "
    "showed, and " + MEANING[0].lower() + MEANING[1:] + " The selection rate is the share of 'yes' answers to "
    "whether a named person is qualified for an occupation (each name is asked many times: rates are over answers, "
    "the interval over name sets); the scoring rate is the share of answers whose P(yes) is above the median. "
    "Condition: {condition}."
)
# People per category: a decisions run's people; a probed run's names (a pair run: each pair's woman and man).
_PEOPLE = {
    "decisions": """
        SELECT a.attribute, c.category, p.person_id, d.selected, d.score
        FROM run_people AS p JOIN run_decisions AS d USING (run_id, person_id)
        CROSS JOIN (SELECT DISTINCT attribute FROM run_person_categories WHERE run_id = $run_id) AS a
        LEFT JOIN run_person_categories AS c
               ON c.run_id = p.run_id AND c.person_id = p.person_id AND c.attribute = a.attribute
        WHERE p.run_id = $run_id""",
    "sets": """
        SELECT DISTINCT c.attribute, c.category, CASE c.slot WHEN 'female' THEN n.female ELSE n.male END AS person_id,
               NULL::BOOLEAN AS selected, NULL::DOUBLE AS score
        FROM run_contests AS c JOIN run_name_pairs AS n USING (run_id, pair_id) WHERE c.run_id = $run_id""",
    "pairs": """
        SELECT DISTINCT 'sex' AS attribute, slot.name AS category,
               CASE slot.name WHEN 'female' THEN female ELSE male END AS person_id,
               NULL::BOOLEAN AS selected, NULL::DOUBLE AS score
        FROM run_name_pairs CROSS JOIN (VALUES ('female'), ('male')) AS slot(name) WHERE run_id = $run_id""",
}


def ll144_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[pd.DataFrame, str]:
    """The summary's rows (LL144_COLUMNS) and its definitions paragraph."""
    run = con.execute(
        "SELECT backend, model, config_json, created_at, finished_at FROM runs WHERE run_id = ?", [run_id]
    ).fetchone()
    if run is None:
        raise UserError(f"{run_id}: no such run")
    backend, model, config_json, created, finished = run
    config = json.loads(config_json or "{}")
    counts = stored_counts(con, run_id, "impact_counts")  # the overall scope's, as analyze() counted them
    if backend == DECISIONS_BACKEND:
        condition, kind = DECISIONS_CONDITION, "decisions"
        source, period = f"imported decisions: {config.get('decisions')}", config.get("period") or "not given"
        definitions = DECISIONS_DEFINITIONS
    else:
        found = [c for c in CONDITIONS if c in set(counts["condition"])]
        if not found:
            raise UserError(f"run {run_id!r}: no adverse-impact counts (a run with stage-2 answers has them)")
        condition = found[0]
        kind = (
            "sets"
            if con.execute("SELECT count(*) FROM run_contests WHERE run_id = ?", [run_id]).fetchone()[0]
            else "pairs"
        )
        source = f"probe of {model or 'an unnamed model'} ({backend} backend, run {run_id})"
        period = f"{created:%Y-%m-%d} to {(finished or created):%Y-%m-%d}"
        definitions = PROBED_DEFINITIONS.format(condition=condition)
    people = con.execute(_PEOPLE[kind], {"run_id": run_id}).df()
    counts = counts[counts["condition"] == condition]
    rows = []
    for (attribute, rate_kind), group in counts.groupby(["attribute", "rate_kind"]):
        rows += _attribute_rows(
            attribute, rate_kind, group.drop(columns=GROUP_COLUMNS), people[people["attribute"] == attribute]
        )
    table = pd.DataFrame(rows, columns=LL144_COLUMNS[:-2]).assign(source=source, period=period)
    return table, definitions


def _attribute_rows(attribute: str, rate_kind: str, counts: pd.DataFrame, people: pd.DataFrame) -> list[dict]:
    """One attribute and rate kind: its categories (those under 2% of the applicants left out of the ratios) and the
    row of people without a category."""
    applicants = people.dropna(subset=["category"]).groupby("category")["person_id"].nunique()
    total = people["person_id"].nunique()
    excluded = {category for category, n in applicants.items() if n < SMALL_CATEGORY * total}
    every = group_ratios(counts)
    ratios = group_ratios(counts[~counts["category"].isin(excluded)])
    rows = []
    for category in every.categories:
        interval = None if category in excluded else ratios.interval(category)
        p_value = None if category in excluded else ratios.p_below(category)
        rows.append(
            {
                "attribute": attribute,
                "category": category,
                "applicants": int(applicants.get(category, 0)),
                "rate_kind": rate_kind,
                "rate": every.rates.get(category, math.nan),
                "impact_ratio": math.nan if category in excluded else ratios.value(category),
                "ci_low": interval[0] if interval else math.nan,
                "ci_high": interval[1] if interval else math.nan,
                "p_value": math.nan if p_value is None else p_value,
                "excluded_under_2pct": category in excluded,
                "unknown": every.answers(category)[1],
            }
        )
    unknown = people[people["category"].isna()]
    if not unknown.empty:
        rows.append(
            {
                "attribute": attribute,
                "category": UNKNOWN,
                "applicants": int(unknown["person_id"].nunique()),
                "rate_kind": rate_kind,
                "rate": _unknown_rate(unknown, people, rate_kind),
                "impact_ratio": math.nan,
                "ci_low": math.nan,
                "ci_high": math.nan,
                "p_value": math.nan,
                "excluded_under_2pct": False,
                "unknown": int(unknown["selected"].isna().sum()),
            }
        )
    return rows


def _unknown_rate(unknown: pd.DataFrame, people: pd.DataFrame, rate_kind: str) -> float:
    """The rate of the people without a category: selected among those decided, or scoring above the median score
    of everyone scored (as the categories' rates)."""
    if rate_kind == "scoring":
        scored = unknown["score"].dropna()
        median = people.drop_duplicates("person_id")["score"].median()
        return float((scored > median).mean()) if len(scored) else math.nan
    decided = unknown["selected"].dropna()
    return float(decided.astype(bool).mean()) if len(decided) else math.nan


def write_ll144(db_path: Path, run_id: str, file_format: str, out_dir: Path) -> list[Path]:
    """ll144.csv (no cell a spreadsheet would run), ll144.md and ll144.html (every user string escaped)."""
    con, _ = db.connect_or_snapshot(db_path)
    try:
        table, definitions = ll144_rows(con, run_id)
    finally:
        con.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, md_path, html_path = (out_dir / f"ll144.{suffix}" for suffix in ("csv", "md", "html"))
    with atomic_path(csv_path) as temporary:
        csv_safe(table).to_csv(temporary, index=False)
    write_atomic(md_path, _markdown(table, definitions))
    write_atomic(html_path, _html(table, definitions))
    return [csv_path, md_path, html_path]


def _cell(value: object) -> str:
    """A number as the summary prints it (rates and ratios to 3 places, p to 2 significant digits), else text."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return MISSING if math.isnan(value) else "inf" if math.isinf(value) else f"{value:.3f}"
    return str(value)


def _display(table: pd.DataFrame) -> list[list[str]]:
    return [
        [_cell(value) if column != "p_value" or pd.isna(value) else f"{value:.2g}" for column, value in row.items()]
        for _, row in table.iterrows()
    ]


def _markdown(table: pd.DataFrame, definitions: str) -> str:
    lines = [
        "# Summary of results: selection and scoring rates and impact ratios (6 RCNY 5-301)",
        "",
        markdown_text(definitions),
        "",
        "Categories under 2% of the applicants are marked and left out of the impact ratios (6 RCNY 5-301); their "
        "count and rate are shown. Intervals and p: 95%, the ratio's test of 1 (taxonomy-probe).",
        "",
        "| " + " | ".join(LL144_COLUMNS) + " |",
        "|" + "---|" * len(LL144_COLUMNS),
    ]
    lines += ["| " + " | ".join(markdown_text(cell) for cell in cells) + " |" for cells in _display(table)]
    return "\n".join(lines) + "\n"


def _html(table: pd.DataFrame, definitions: str) -> str:
    def text(value: str) -> str:
        return html.escape(page_text(value))

    head = "".join(f"<th>{text(column)}</th>" for column in LL144_COLUMNS)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{text(cell)}</td>" for cell in cells) + "</tr>" for cells in _display(table)
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Summary of results (6 RCNY '
        "5-301)</title></head>\n<body>\n<h1>Summary of results: selection and scoring rates and impact "
        "ratios</h1>\n"
        f"<p>{text(definitions)}</p>\n<p>Categories under 2% of the applicants are marked and left out of the "
        "impact ratios (6 RCNY 5-301); their count and rate are shown.</p>\n"
        f"<table>\n<tr>{head}</tr>\n{body}\n</table>\n</body>\n</html>\n"
    )
