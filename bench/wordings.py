"""Do the crossed (pair x wording) intervals of probe/analysis/robustness.py cover? Measured by simulation.

World: G name pairs x 5 wordings x 8 occupations x 2 name orders, stage 2, condition taxonomy. The single-subject
pick S of an instance: logit P(S = female) = pair lean + wording lean + pair x wording lean + occupation lean (the
occupations are the studied set: their leans are the same in every run), plus a position effect (the first-named
person; its size also varies by pair and by wording). Binary answers yes and M = both, so every instance is
valid. Wordings are drawn afresh for every simulated run: a run's wordings are a sample of the meaning-preserving
ones, as its pairs are of names, and the estimand is the mean over both populations (`true_values`, by Monte Carlo
over 200,000 pairs x wordings with numpy, not the product's SQL).

Each simulated run goes through the product: items and answers into a DuckDB with the product's schema, then
metrics.sql's instances and wording cells and robustness.py (the first run of each size also through the replay
backend, `probe.run(backend="replay", wordings="all")`, and its rows must equal those of the direct path). Per
world and size, the share of runs whose 95% interval holds the truth: the crossed interval and, beside it, the
pair-only interval over the same pair x wording cells (what an analysis that ignores the wording gives).
Target for the crossed interval where wording matters: 0.93-0.97.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from scipy.special import expit

from probe.analysis.metrics import metric_queries
from probe.analysis.robustness import asked_wordings, wording_rows
from probe.common.vocabulary import WORDINGS
from probe.store.config import QUICK_OCCUPATIONS
from probe.store.db import SCHEMA

METRICS = ("female_share", "position_first")
SIZES = ((12, 5), (20, 5))
ORDERS = ("fm", "mf")
OCCUPATION_LEANS = np.random.default_rng(0).normal(0, 1, len(QUICK_OCCUPATIONS))  # per occupation, every run


@dataclass(frozen=True)
class WordingWorld:
    """Logit-scale standard deviations of the leans; `wording` = the planted wording effect."""

    name: str
    wording: float
    pair: float = 0.6
    cell: float = 0.3  # pair x wording
    occupation: float = 0.5
    position: float = 0.4  # mean position effect (logit); its spread by pair and wording: pair / 2, wording
    base: float = 0.2  # mean lean to the woman (logit)


WORLDS = (WordingWorld("planted", wording=0.5), WordingWorld("strong", wording=1.0), WordingWorld("none", 0.0))


def _probabilities(world: WordingWorld, pairs: int, wordings: int, rng: np.random.Generator) -> np.ndarray:
    """P(S = female) per (pair, wording, occupation, order): shape pairs x wordings x occupations x 2."""
    occupation = world.occupation * OCCUPATION_LEANS.reshape(1, 1, -1)  # the studied set: fixed, not sampled
    lean = (
        world.base
        + rng.normal(0, world.pair, (pairs, 1, 1))
        + rng.normal(0, world.wording, (1, wordings, 1))
        + rng.normal(0, world.cell, (pairs, wordings, 1))
        + occupation
    )
    position = (
        world.position + rng.normal(0, world.pair / 2, (pairs, 1, 1)) + rng.normal(0, world.wording, (1, wordings, 1))
    )
    # fm: the woman is named first, so the position effect pushes toward her; mf: away from her
    return expit(np.stack([lean + position, lean - position], axis=-1))


def true_values(world: WordingWorld, seed: int = 7) -> dict[str, float]:
    """The estimands: the mean over pairs and wordings of the order-balanced female share and of position_first."""
    rng = np.random.default_rng(seed)
    p = _probabilities(world, 1000, 200, rng)  # 1000 pairs x 200 wordings: 200,000 pair x wording cells
    return {"female_share": float(p.mean()), "position_first": float((p[..., 0] + 1 - p[..., 1]).mean() / 2)}


def simulated_labels(world: WordingWorld, pairs: int, wordings: int, rng: np.random.Generator) -> pd.DataFrame:
    """Stage-2 replay rows (one per item) of one simulated run: S drawn per instance, B = yes, M = both."""
    probabilities = _probabilities(world, pairs, wordings, rng)
    female = rng.random(probabilities.shape) < probabilities
    rows = []
    for (g, w, o, r), picked in np.ndenumerate(female):
        common = {
            "stage": 2,
            "condition": "taxonomy",
            "pair_id": g + 1,
            "name_order": ORDERS[r],
            "occupation": QUICK_OCCUPATIONS[o],
            "category": None,
            "attribute": None,
            "wording": WORDINGS[w],
        }
        rows.append(common | {"qtype": "single", "subject": None, "label": "female" if picked else "male"})
        rows.append(common | {"qtype": "multiple", "subject": None, "label": "both"})
        rows += [common | {"qtype": "binary", "subject": subject, "label": "yes"} for subject in ("female", "male")]
    return pd.DataFrame(rows)


def _crossed_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    query = (
        "SELECT metric, value, ci_low, ci_high, pair_ci_low, pair_ci_high FROM robustness "
        "WHERE run_id = ? AND scope = 'crossed' AND condition = 'taxonomy' ORDER BY metric"
    )
    return con.execute(query, [run_id]).df().set_index("metric")


def analysed(con: duckdb.DuckDBPyConnection, labels: pd.DataFrame) -> pd.DataFrame:
    """One simulated run stored as items and answers, analysed by the product's SQL and robustness.py."""
    for table in ("runs", "items", "answers"):
        con.execute(f"DELETE FROM {table}")
    con.execute("INSERT INTO runs (run_id, status) VALUES ('sim', 'complete')")
    items = labels.drop(columns="label").assign(item_id=[str(index) for index in range(len(labels))])
    items["seq"] = range(len(items))
    answers = pd.DataFrame({"item_id": items["item_id"], "label": labels["label"]})
    for table, frame in (("items", items), ("answers", answers)):
        con.register("frame", frame)
        con.execute(f"INSERT INTO {table} BY NAME SELECT 'sim' AS run_id, * FROM frame")
        con.unregister("frame")
    queries = metric_queries()
    con.execute(queries["instances"], {"run_id": "sim"})
    try:
        cells = con.execute(queries["wording_cells"]).df()
        grants = con.execute(queries["wording_grants"], {"run_id": "sim"}).df()
        rows = wording_rows(cells, grants, asked_wordings(con, "sim"))
    finally:
        con.execute(queries["drop_instances"])
    crossed = rows[(rows["scope"] == "crossed") & (rows["condition"] == "taxonomy")].sort_values("metric")
    return crossed.set_index("metric")[["value", "ci_low", "ci_high", "pair_ci_low", "pair_ci_high"]]


def through_replay(labels: pd.DataFrame, pairs: int) -> pd.DataFrame:
    """The same simulated run through `probe.run` with the replay backend and every wording."""
    import probe

    with tempfile.TemporaryDirectory() as folder:
        answers = Path(folder) / "answers.csv"
        labels.to_csv(answers, index=False)
        database = str(Path(folder) / "probe.duckdb")
        run = probe.run(
            backend="replay",
            answers=str(answers),
            pairs=pairs,
            occupations=list(QUICK_OCCUPATIONS),
            top_k=1,
            conditions=["taxonomy"],
            wordings="all",
            db=database,
            quiet=True,
        )
        con = duckdb.connect(database, read_only=True)
        try:
            return _crossed_rows(con, run.run_id)
        finally:
            con.close()


def coverage(world: WordingWorld, pairs: int, wordings: int, runs: int, seed: int) -> dict[str, float]:
    """Share of `runs` simulated runs whose crossed / pair-only interval holds each metric's true value."""
    truth = true_values(world)
    rng = np.random.default_rng(seed)
    con = duckdb.connect()
    con.execute(SCHEMA)
    hits = {f"{kind}_{metric}": 0 for kind in ("crossed", "pairs") for metric in METRICS}
    widths = {kind: [] for kind in ("crossed", "pairs")}
    for run in range(runs):
        labels = simulated_labels(world, pairs, wordings, rng)
        rows = analysed(con, labels)
        if run == 0:
            pd.testing.assert_frame_equal(rows, through_replay(labels, pairs), check_exact=False)
        for metric in METRICS:
            row = rows.loc[metric]
            hits[f"crossed_{metric}"] += bool(row["ci_low"] <= truth[metric] <= row["ci_high"])
            hits[f"pairs_{metric}"] += bool(row["pair_ci_low"] <= truth[metric] <= row["pair_ci_high"])
            widths["crossed"].append(row["ci_high"] - row["ci_low"])
            widths["pairs"].append(row["pair_ci_high"] - row["pair_ci_low"])
    con.close()
    figures = {name: round(count / runs, 3) for name, count in hits.items()}
    figures["width_ratio"] = round(float(np.median(widths["crossed"]) / np.median(widths["pairs"])), 2)
    return figures


def measure(quick: bool) -> dict[str, float]:
    """Coverage per world and size (--quick: 100 runs each, else 400)."""
    runs = 100 if quick else 400
    figures: dict[str, float] = {"robustness_runs": runs}
    for world in WORLDS:
        for pairs, wordings in SIZES:
            found = coverage(world, pairs, wordings, runs, seed=pairs * 100 + wordings)
            prefix = f"robustness_{world.name}_{pairs}x{wordings}"
            figures.update({f"{prefix}_{name}": value for name, value in found.items()})
    return figures
