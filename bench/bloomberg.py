"""Bloomberg's 2024 GPT resume-ranking study reproduced from its raw files, with what the study could not say:
`python -m bench.bloomberg [DIR]` (default /work/data/bloomberg, their public repository; about a minute).

Imports every model's rankings (`probe import bloomberg`), checks each of the 64 rows of their
data/output/performance_ranking.csv (top count, selection rate, impact ratio to the highest group) for exact equality,
and prints the side-by-side table of docs/decisions.md: each ratio with its 95% interval (two-way clustered by
ranking and by name: the 100 names per group recur across the 1,000 rankings), its test of ratio = 1, and the
four-fifths verdict with that interval (shown below 0.8 where the whole interval is), by intersection, sex and
race/ethnicity; then how much wider the two-way intervals are than ranking-only ones.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import duckdb
import pandas as pd

from probe.analysis.impact import FOUR_FIFTHS, group_ratios
from probe.analysis.metrics import metric_queries
from probe.answering.bloomberg import RACES, SEXES, published_table
from probe.pipeline.decisions import import_bloomberg
from probe.taxonomy.name_sets import JOINT

DEFAULT_DIR = Path("/work/data/bloomberg")
INTERSECTION = "sex x race_ethnicity"


def demo_code(category: str) -> str:
    """'male x Black' -> 'B_M' (their demo code)."""
    sex, race = category.split(JOINT)
    return f"{_code(RACES, race)}_{_code(SEXES, sex)}"


def _code(codes: dict[str, str], value: str) -> str:
    return next(code for code, name in codes.items() if name == value)


def ours(db: Path) -> pd.DataFrame:
    """Every job-scope selection row of both runs, with model and the top count."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT r.model, a.* FROM adverse_impact a JOIN runs r USING (run_id) "
            "WHERE a.scope = 'job' AND a.rate_kind = 'selection'"
        ).df()
    finally:
        con.close()
    rows["top"] = (rows["rate"] * rows["n"]).round().astype(int)
    return rows.rename(columns={"key": "job"})


def reproduce(directory: Path, db: Path) -> pd.DataFrame:
    """Their 64 rows beside ours: published top / selection_rate / disparate_impact_ratio, ours, and whether each
    is exactly equal; our interval, p and the four-fifths reading."""
    import_bloomberg(directory, db)
    table = ours(db)
    joint = table[table["attribute"] == INTERSECTION].assign(demo=lambda f: f["category"].map(demo_code))
    published = published_table(directory)
    merged = published.merge(joint, on=["model", "job", "demo"], how="left", suffixes=("_published", ""))
    merged["equal"] = (
        (merged["top_published"] == merged["top"])
        & (merged["selection_rate"] == merged["rate"])
        & (merged["disparate_impact_ratio"] == merged["impact_ratio"])
    )
    return merged


def verdict(row: pd.Series) -> str:
    """The four-fifths reading with the interval: below / not below 0.8 as shown, or not shown either way (no
    interval: the category is shown to have the highest rate, its ratio 1)."""
    if math.isnan(row["ci_low"]) or (row["impact_ratio"] >= FOUR_FIFTHS and row["ci_low"] >= FOUR_FIFTHS):
        return "at or above 0.8, shown"
    if row["ci_high"] < FOUR_FIFTHS:
        return "below 0.8, shown"
    return "below 0.8, not shown" if row["impact_ratio"] < FOUR_FIFTHS else "at or above 0.8, not shown"


def markdown(rows: pd.DataFrame, published: bool) -> str:
    """A Markdown table of rows (one model x job x category each)."""
    head = ["model", "job", "group"] + (["their top", "their rate", "their ratio"] if published else [])
    head += ["top / n", "rate", "impact ratio", "95% CI", "p (ratio = 1)", "four-fifths"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, row in rows.iterrows():
        cells = [row["model"], row["job"], row.get("demo", row["category"])]
        if published:
            cells += [str(row["top_published"]), f"{row['selection_rate']:.3f}", f"{row['disparate_impact_ratio']:.3f}"]
        interval = "shown highest" if math.isnan(row["ci_low"]) else f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        cells += [
            f"{row['top']} / {row['n']}",
            f"{row['rate']:.3f}",
            f"{row['impact_ratio']:.3f}",
            interval,
            f"{row['p_value']:.2g}",
            verdict(row),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def width_ratio(db: Path) -> pd.DataFrame:
    """Per run and attribute: the median width of the two-way intervals over that of ranking-only intervals (the
    same counts without names), over the job-scope selection rows."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        run_ids = [row[0] for row in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
        counts = {run_id: con.execute(metric_queries()["impact_counts"], {"run_id": run_id}).df() for run_id in run_ids}
    finally:
        con.close()
    rows = []
    for run_id, frame in counts.items():
        jobs = frame[(frame["scope"] == "job") & (frame["rate_kind"] == "selection")]
        for (attribute, job), group in jobs.groupby(["attribute", "key"]):
            two_way, one_way = group_ratios(group), group_ratios(group.drop(columns="name"))
            for category in two_way.rates:
                both, single = two_way.interval(category), one_way.interval(category)
                if both and single:
                    rows.append(
                        {
                            "run_id": run_id,
                            "attribute": attribute,
                            "job": job,
                            "category": category,
                            "widening": (both[1] - both[0]) / (single[1] - single[0]),
                        }
                    )
    return pd.DataFrame(rows)


def main(directory: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bloomberg.duckdb"
        merged = reproduce(directory, db)
        print(f"rows_published={len(merged)} rows_equal={int(merged['equal'].sum())}")
        below = merged[merged["impact_ratio"] < FOUR_FIFTHS]
        print(f"ratios_below_0.8={len(below)} shown_below={int((below['ci_high'] < FOUR_FIFTHS).sum())}")
        print(markdown(merged.sort_values(["model", "job", "impact_ratio"]), published=True))
        table = ours(db)
        for attribute in ("sex", "race_ethnicity"):
            rows = table[table["attribute"] == attribute].sort_values(["model", "job", "impact_ratio"])
            print(f"\n{attribute}\n" + markdown(rows, published=False))
        widening = width_ratio(db)
        print("\n" + widening.groupby("attribute")["widening"].describe()[["min", "50%", "max"]].to_string())


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR)
