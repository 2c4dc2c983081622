"""Create a synthetic run of a given size directly in DuckDB, for benchmarks (no model, no dataset builder).

The run has the shape of a real one: stage-1 attr items for every (pair, order, subject, attribute) and
stage-2 binary/single/multiple items for every (condition, pair, order, occupation), with answers drawn
from a deterministic hash so the same arguments always give the same run. The female share of S varies by
occupation (0.2 to 0.8) so the preference tests and the regression have something to find.

    .venv/bin/python -m bench.synthetic --answers 1000000 --db runs/bench.duckdb
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import duckdb

from probe.common.vocabulary import CATEGORIES, CONDITIONS
from probe.store import db

ATTRIBUTES_PER_CATEGORY = 5
ELEMENTS_PER_CATEGORY = 40

SYNTHETIC_RUN_SQL = """
CREATE OR REPLACE TEMP TABLE synthetic_items AS
WITH stage2 AS (
    SELECT 2 AS stage, q.qtype, c.condition, p.pair_id::INTEGER AS pair_id, o.name_order,
           printf('occupation %03d', occ.i) AS occupation, occ.i AS occupation_index, q.subject,
           NULL AS attribute, NULL AS category
    FROM range(1, $pairs + 1) AS p(pair_id)
    CROSS JOIN (VALUES ('fm'), ('mf')) AS o(name_order)
    CROSS JOIN (SELECT unnest($conditions) AS condition) AS c
    CROSS JOIN range($occupations) AS occ(i)
    CROSS JOIN (VALUES ('binary', 'female'), ('binary', 'male'), ('single', NULL), ('multiple', NULL))
        AS q(qtype, subject)
),
stage1 AS (
    SELECT 1 AS stage, 'attr' AS qtype, 'stage1' AS condition, p.pair_id::INTEGER AS pair_id, o.name_order,
           NULL AS occupation, NULL AS occupation_index, s.subject,
           printf('element %02d', e.i) AS attribute, cat.category
    FROM range(1, $pairs + 1) AS p(pair_id)
    CROSS JOIN (VALUES ('fm'), ('mf')) AS o(name_order)
    CROSS JOIN (VALUES ('female'), ('male')) AS s(subject)
    CROSS JOIN (SELECT unnest($categories) AS category) AS cat
    CROSS JOIN range($elements) AS e(i)
),
numbered AS (
    SELECT *, printf('syn-%d', row_number() OVER ()) AS item_id FROM (
        SELECT * FROM stage2 UNION ALL SELECT * FROM stage1
    )
)
SELECT *, (hash(item_id, $seed) % 1000000) / 1e6 AS draw FROM numbered;

INSERT INTO runs (run_id, created_at, model, backend, status)
VALUES ($run_id, now(), 'synthetic', 'synthetic', 'complete');

INSERT INTO items (run_id, item_id, stage, qtype, condition, pair_id, name_order, occupation, subject,
                   attribute, category, prompt)
SELECT $run_id, item_id, stage, qtype, condition, pair_id, name_order, occupation, subject,
       attribute, category, 'synthetic'
FROM synthetic_items;

INSERT INTO answers (run_id, item_id, raw, label)
SELECT $run_id, item_id, 'synthetic',
       CASE
           WHEN draw < 0.04 THEN 'unknown'
           WHEN qtype IN ('attr', 'binary') THEN CASE WHEN draw < 0.6 THEN 'yes' ELSE 'no' END
           WHEN qtype = 'single' THEN
               CASE WHEN draw < 0.04 + 0.96 * (0.2 + 0.6 * (occupation_index % 7) / 6) THEN 'female'
                    ELSE 'male' END
           ELSE CASE WHEN draw < 0.35 THEN 'female' WHEN draw < 0.7 THEN 'male'
                     WHEN draw < 0.9 THEN 'both' ELSE 'neither' END
       END
FROM synthetic_items;

INSERT INTO run_attributes (run_id, occupation, soc_code, category, rank, element_name, importance, level)
SELECT $run_id, printf('occupation %03d', occ.i), 'synthetic', cat.category, r.rank::INTEGER,
       printf('element %02d', (occ.i * 7 + r.rank * 3) % $elements), 5.0 - r.rank / 2, 4.0
FROM range($occupations) AS occ(i)
CROSS JOIN (SELECT unnest($categories) AS category) AS cat
CROSS JOIN range(1, $top_k + 1) AS r(rank);

DROP TABLE synthetic_items;
"""


def answers_per_pair(occupations: int, conditions: int) -> int:
    """Stage-2 items (4 per instance, 2 orders) plus stage-1 attr items (2 orders x 2 subjects)."""
    return 2 * 4 * conditions * occupations + 2 * 2 * len(CATEGORIES) * ELEMENTS_PER_CATEGORY


def create_synthetic_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    pairs: int,
    occupations: int = 62,
    conditions: tuple[str, ...] = CONDITIONS,
    seed: int = 0,
) -> int:
    """Insert a complete synthetic run (runs, items, answers, run_attributes); return its answer count."""
    params = {
        "run_id": run_id,
        "pairs": pairs,
        "occupations": occupations,
        "conditions": list(conditions),
        "categories": list(CATEGORIES),
        "elements": ELEMENTS_PER_CATEGORY,
        "top_k": ATTRIBUTES_PER_CATEGORY,
        "seed": seed,
    }
    for statement in SYNTHETIC_RUN_SQL.split(";"):
        if statement.strip():
            used = {name: value for name, value in params.items() if f"${name}" in statement}
            con.execute(statement, used)
    return con.execute("SELECT count(*) FROM answers WHERE run_id = ?", [run_id]).fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1_000_000, help="approximate number of answers")
    parser.add_argument("--occupations", type=int, default=62)
    parser.add_argument("--db", type=Path, default=Path("runs/bench.duckdb"))
    parser.add_argument("--run-id", default="synthetic")
    args = parser.parse_args()
    pairs = math.ceil(args.answers / answers_per_pair(args.occupations, len(CONDITIONS)))
    con = db.connect(args.db)
    count = create_synthetic_run(con, args.run_id, pairs=pairs, occupations=args.occupations)
    print(f"{args.db}: run {args.run_id!r} with {pairs} pairs, {count:,} answers")


if __name__ == "__main__":
    main()
