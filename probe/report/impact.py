"""The report's adverse-impact section (DESIGN.md section 11): the `adverse_impact` rows with a sentence for each
category whose ratio's test rejects, the note on categories under 2%, and the figure of the ratios against 0.8."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import pandas as pd

from probe.analysis.binomial import SIGNIFICANCE
from probe.analysis.impact import AT_OR_ABOVE, BELOW, IMPACT_COLUMNS, IMPACT_METHOD, PER_KEY_SCOPES
from probe.common.vocabulary import CONDITIONS, DECISIONS_CONDITION, RATE_KINDS, SEX_ATTRIBUTE
from probe.report.data import order_index, records
from probe.report.formatting import MISSING, fmt_num, p_phrase
from probe.taxonomy.name_sets import JOINT

SMALL_CATEGORY = 0.02  # 6 RCNY 5-301: a category under 2% of the data may be left out of the ratios; noted here
# What each rate kind counts, as a sentence reads it ("... at 0.72 the rate of men").
RATE_PHRASES = {
    "selection": "called qualified",
    "contest": "won the single-subject question",
    "scoring": "scored above the median P(yes)",
    "ranking": "picked as the most qualified of their name set",
}
# An imported decisions run's rate kinds (probe/answering/decisions.py), as its sentences read them.
DECISION_RATE_PHRASES = {"selection": "were selected", "scoring": "scored above the median score"}
# the default pairs' categories (and a names file's Woman / Man), as a sentence names them
CATEGORY_NOUNS = {"female": "women", "male": "men", "woman": "women", "man": "men"}
MEANING = (
    "A name stands for the group it signals to a reader (perceived membership, as in correspondence studies), not "
    "for anyone's identity: a ratio says how the model treats names associated with a group, and nothing about "
    "people who carry other names or the names' other associations (age, class, region)."
)
CONTESTS_NOTE = (
    "This run asked name sets: two people of a set meet in each question (a contest), and every finding by a group "
    "reads the people's own categories: the contrasts, the ranking, the grant rates per category and this table. "
    "The metrics that would read a contest's first and second person as a woman and a man are not computed."
)
DECISIONS_MEANING = (
    "These are imported decisions, not probed answers: each row of the file is a decision someone else made about a "
    "person (selected, or ranked first; scoring: a score above the median score). The unit is the set (the people "
    "one decision was about); where a name recurs across sets the interval is clustered by name too."
)
# What the section's rates, unit and per-key rows are, per kind of run (the templates' first paragraph).
RATES_TEXT = {
    "probed": (
        "selection: called qualified in the binary question; contest: won the single-subject question; "
        "scoring: P(yes) above the median",
        "name sets",
        "occupation",
    ),
    "decisions": (
        "selection: selected, or ranked first; scoring: a score above the median score of everyone scored",
        "sets (each a decision over its people), two-way with recurring names",
        "job",
    ),
}
REPORT_COLUMNS = [*IMPACT_COLUMNS, "reference", "small", "finding"]
COMPARED_COLUMNS = (
    "category",
    "n",
    "rate",
    "impact_ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "four_fifths",
    "four_fifths_verdict",
    "reference",
)


def adverse_impact_section(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """report.json's `adverse_impact` (rows, each with the category the ratio is to, whether the category is under 2%
    of its group's answers, and a finding where its test rejects) and the method; None before the run was analysed
    with the table."""
    table = con.execute(f"SELECT {', '.join(IMPACT_COLUMNS)} FROM adverse_impact WHERE run_id = ?", [run_id]).df()
    if table.empty:
        return None
    ranks = {
        "condition": lambda c: order_index(CONDITIONS, c),
        "rate_kind": lambda k: order_index(RATE_KINDS, k),
        "scope": lambda scope: scope != "overall",
    }
    order = ["condition", "attribute", "rate_kind", "scope", "key", "category"]
    table = table.sort_values(
        order, key=lambda column: column.map(ranks[column.name]) if column.name in ranks else column, ignore_index=True
    )
    group = order[:-1]
    # the highest-rate category (ties: the first in order), the one the sentences name
    references = table.dropna(subset=["rate"]).sort_values(["rate", "category"], ascending=[False, True])
    references = references.drop_duplicates(group).query("rate > 0")
    table = table.merge(references[[*group, "category"]].rename(columns={"category": "reference"}), how="left")
    table["reference"] = table["reference"].astype(object).where(table["reference"].notna(), None)
    table["small"] = table["n"] < SMALL_CATEGORY * table.groupby(group)["n"].transform("sum")
    table["finding"] = [finding(row) for row in table.to_dict("records")]
    contests = con.execute("SELECT count(*) FROM run_contests WHERE run_id = ?", [run_id]).fetchone()[0]
    kind = "decisions" if (table["condition"] == DECISIONS_CONDITION).all() else "probed"
    rates, unit, per_key = RATES_TEXT[kind]
    return {
        "method": IMPACT_METHOD,
        "meaning": DECISIONS_MEANING if kind == "decisions" else MEANING,
        "contests_note": CONTESTS_NOTE if contests else None,
        "rates": rates,
        "unit": unit,
        "per_key": per_key,
        "rows": records(table[REPORT_COLUMNS]),
    }


def category_noun(attribute: str, category: str, people: str = "names") -> str:
    """How a sentence names a category's people: women / men for sex, `Black women` for 'sex x race_ethnicity'
    (a sex among the values names the people), else `<category> names` (imported decisions: `<category> people`)."""
    levels = dict(zip(attribute.split(JOINT), category.split(JOINT), strict=True))
    sex = levels.pop(SEX_ATTRIBUTE, None)
    if sex is not None and sex.casefold() in CATEGORY_NOUNS:
        return " ".join([*levels.values(), CATEGORY_NOUNS[sex.casefold()]])
    return f"{category} {people}"


def finding(row: Mapping[str, Any]) -> str | None:
    """One sentence for a category whose ratio's test rejects after Benjamini-Hochberg (q < 0.05: overall over the
    categories of its condition, attribute and rate kind; an occupation over occupations x categories), else None:
    "taxonomy: women were called qualified at 0.72 the rate of men [0.61, 0.85]: below four-fifths, q = 0.003". The
    four-fifths words are the stored verdict of the interval."""
    occupation = row["scope"] in PER_KEY_SCOPES
    decisive = row["q_value"]
    if decisive is None or pd.isna(decisive) or not decisive < SIGNIFICANCE or row["reference"] is None:
        return None
    verdict = {BELOW: "below four-fifths", AT_OR_ABOVE: "lower, but not below four-fifths"}.get(
        row.get("four_fifths_verdict"), "lower; four-fifths neither shown nor ruled out"
    )
    where = f" for {row['key']}" if occupation else ""
    test = p_phrase(row["q_value"], "q")
    interval = f"[{fmt_num(row['ci_low'], 2)}, {fmt_num(row['ci_high'], 2)}]"
    decided = row["condition"] == DECISIONS_CONDITION
    phrases, people = (DECISION_RATE_PHRASES, "people") if decided else (RATE_PHRASES, "names")
    return (
        f"{row['condition']}{where}: {category_noun(row['attribute'], row['category'], people)} "
        f"{phrases[row['rate_kind']]} at {fmt_num(row['impact_ratio'], 2)} the rate of "
        f"{category_noun(row['attribute'], row['reference'], people)} {interval}: {verdict}, {test}"
    )


def findings(section: Mapping[str, Any] | None) -> list[str]:
    """The section's sentences, overall rows first."""
    if not section:
        return []
    rows = sorted(section["rows"], key=lambda row: row["scope"] != "overall")
    return [row["finding"] for row in rows if row["finding"]]


def overall_rows(section: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The overall-scope rows: the pages' table (per occupation: report.json)."""
    return [row for row in section["rows"] if row["scope"] == "overall"] if section else []


def fmt_ratio_ci(row: Mapping[str, Any]) -> str:
    """`0.60 [0.45, 0.78]`, the highest-rate category marked `(highest)`; no interval: `(no interval)`."""
    ratio = row.get("impact_ratio")
    if ratio is None:
        return MISSING
    highest = " (highest)" if row.get("reference") == row.get("category") else ""
    if row.get("ci_low") is None:
        return f"{fmt_num(ratio, 2)} (no interval){highest}"
    return f"{fmt_num(ratio, 2)} [{fmt_num(row['ci_low'], 2)}, {fmt_num(row['ci_high'], 2)}]{highest}"


def compared_ratios(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    """compare.json's `adverse_impact`: per (condition, attribute, rate kind, category) each run's overall rate and
    impact ratio with its interval and test (`runs`: run id -> row; a run without the row is absent)."""
    rows: dict[tuple, dict[str, Any]] = {}
    for run_id in run_ids:
        for row in overall_rows(adverse_impact_section(con, run_id)):
            key = (row["condition"], row["attribute"], row["rate_kind"], row["category"])
            entry = rows.setdefault(
                key, dict(zip(("condition", "attribute", "rate_kind", "category"), key, strict=True)) | {"runs": {}}
            )
            entry["runs"][run_id] = {name: row[name] for name in COMPARED_COLUMNS}
    return list(rows.values())
