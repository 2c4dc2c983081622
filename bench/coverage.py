"""Coverage of the report's intervals and error rate of its occupation list, by simulation.

Each simulated run has known effects and goes through the real analysis (`probe.metrics.analyze` on a DuckDB
with the product's schema): items and answers in, metrics and occupation preferences out. Name pairs are a
random sample (each pair draws its own effects around the truth); occupations are a fixed set: some planted
strongly female, some strongly male, the rest fair coins.

- `ci_coverage`: share of the nominal-95% intervals of the headline metrics (female_share, position_first,
  consistency, bias, attr_yes_f, attr_yes_m, attr_yes_diff) that contain the true value (the expectation over
  the pair distribution, computed by Monte Carlo with 200,000 pairs). Target 0.93-0.97.
- `occupation_fdr`: mean over runs of (fair occupations flagged) / (occupations flagged), 0 when none is.
  Target <= 0.05 (Benjamini-Hochberg at q < 0.05).
- `planted_power`: share of planted occupations flagged with the planted direction.
"""

from __future__ import annotations

import itertools
import time

import duckdb
import numpy as np
import pandas as pd
from scipy.special import expit

from probe.db import SCHEMA
from probe.metrics import analyze

PLANTED_FEMALE = ("nurse", "secretary", "dancer")
PLANTED_MALE = ("pilot", "firefighter", "mechanic")
FAIR = ("accountant", "cook", "teacher", "lawyer", "writer", "banker")
OCCUPATIONS = (*PLANTED_FEMALE, *PLANTED_MALE, *FAIR)
PLANTED_LOGIT = 2.5  # P(S = female) = 0.92 for planted-female occupations, 0.08 for planted-male
OCCUPATION_LOGITS = np.array(
    [PLANTED_LOGIT] * len(PLANTED_FEMALE) + [-PLANTED_LOGIT] * len(PLANTED_MALE) + [0.0] * len(FAIR)
)
ATTRIBUTES = 10  # stage-1 attributes asked per subject and order
HEADLINE = ("female_share", "position_first", "consistency", "bias", "attr_yes_f", "attr_yes_m", "attr_yes_diff")


class Truth:
    """The population of name pairs: each pair's effects on the logit scale are mean + sd * N(0, 1)."""

    # Extra log-odds of picking the woman, on top of the occupation's. Mean 0 keeps the fair-coin occupations
    # at 0.5 on average (each pair still leans its own way: the binomial test's independence is stressed).
    female = (0.0, 0.4)
    position = (0.5, 0.4)  # log-odds of picking whoever is named first
    consistency = (1.0, 0.6)  # log-odds that a subject's binary answer is yes
    bias = (-0.3, 0.6)  # log-odds that M repeats S (else M = both)
    granted = (0.0, 0.3)  # log-odds of a yes in stage 1 (both genders)
    granted_gap = (0.2, 0.3)  # extra log-odds for the woman, half added to her and half taken from him

    def draw(self, rng: np.random.Generator, pairs: int) -> dict[str, np.ndarray]:
        names = ("female", "position", "consistency", "bias", "granted", "granted_gap")
        return {name: getattr(self, name)[0] + getattr(self, name)[1] * rng.standard_normal(pairs) for name in names}

    def expected(self, draws: int = 200_000) -> dict[str, float]:
        """The estimands: the expected pair value of each headline metric over the pair distribution."""
        pair = self.draw(np.random.default_rng(1), draws)
        logit_fm = OCCUPATION_LOGITS[None, :] + pair["female"][:, None] + pair["position"][:, None]
        logit_mf = OCCUPATION_LOGITS[None, :] + pair["female"][:, None] - pair["position"][:, None]
        female_fm, female_mf = expit(logit_fm).mean(axis=1), expit(logit_mf).mean(axis=1)
        granted_f = expit(pair["granted"] + pair["granted_gap"] / 2)
        granted_m = expit(pair["granted"] - pair["granted_gap"] / 2)
        return {
            "female_share": float(((female_fm + female_mf) / 2).mean()),
            "position_first": float(((female_fm + (1 - female_mf)) / 2).mean()),
            "consistency": float(expit(pair["consistency"]).mean()),
            "bias": float(expit(pair["bias"]).mean()),
            "attr_yes_f": float(granted_f.mean()),
            "attr_yes_m": float(granted_m.mean()),
            "attr_yes_diff": float((granted_f - granted_m).mean()),
        }


def simulate_answers(rng: np.random.Generator, truth: Truth, pairs: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Items and answers of one run: stage 1 and the taxonomy condition of stage 2, every answer valid."""
    effects = truth.draw(rng, pairs)
    occupation_logit = dict(zip(OCCUPATIONS, OCCUPATION_LOGITS, strict=True))
    items, labels = [], []

    def add(label: str, **fields: object) -> None:
        items.append({"item_id": f"i{len(items)}", **fields})
        labels.append(label)

    for index, order in itertools.product(range(pairs), ("fm", "mf")):
        pair_id, sign = index + 1, 1 if order == "fm" else -1
        for subject, attribute in itertools.product(("female", "male"), range(ATTRIBUTES)):
            gap = effects["granted_gap"][index] / 2 * (1 if subject == "female" else -1)
            yes = rng.random() < expit(effects["granted"][index] + gap)
            add("yes" if yes else "no", stage=1, qtype="attr", condition="stage1", pair_id=pair_id,
                name_order=order, subject=subject, category="skill", attribute=f"a{attribute}")  # fmt: skip
        for occupation in OCCUPATIONS:
            logit = occupation_logit[occupation] + effects["female"][index] + sign * effects["position"][index]
            single = "female" if rng.random() < expit(logit) else "male"
            multiple = single if rng.random() < expit(effects["bias"][index]) else "both"
            where = dict(stage=2, condition="taxonomy", pair_id=pair_id, name_order=order, occupation=occupation)
            for subject in ("female", "male"):
                yes = rng.random() < expit(effects["consistency"][index])
                add("yes" if yes else "no", qtype="binary", subject=subject, **where)
            add(single, qtype="single", **where)
            add(multiple, qtype="multiple", **where)
    frame = pd.DataFrame(items)
    return frame, pd.DataFrame({"item_id": frame["item_id"], "label": labels})


def analyse_simulated(con: duckdb.DuckDBPyConnection, items: pd.DataFrame, answers: pd.DataFrame) -> tuple:
    """Store one simulated run, analyse it with the product's code, return (overall rows, preferences)."""
    for table in ("runs", "items", "answers"):
        con.execute(f"DELETE FROM {table}")
    con.execute("INSERT INTO runs (run_id, status) VALUES ('sim', 'complete')")
    for table, frame in (("items", items), ("answers", answers)):
        con.register("frame", frame)
        con.execute(f"INSERT INTO {table} BY NAME SELECT 'sim' AS run_id, * FROM frame")
        con.unregister("frame")
    analyze(con, "sim")
    overall = con.execute(
        "SELECT metric, value, ci_low, ci_high FROM metrics WHERE scope = 'overall' "
        "AND condition IN ('taxonomy', 'stage1')"
    ).df()
    preferences = con.execute("SELECT occupation, preferred FROM occupation_preference").df()
    return overall, preferences


def measure(quick: bool) -> dict[str, float]:
    """Coverage, FDR and power over simulated runs of 6 name pairs (the quick preset) and of 20."""
    truth = Truth()
    expected = truth.expected()
    rng = np.random.default_rng(20240229)
    con = duckdb.connect()
    con.execute(SCHEMA)
    sizes = {6: 150 if quick else 600, 20: 50 if quick else 200}
    figures: dict[str, float] = {}
    covered_all, intervals_all, fdrs, found, planted = 0, 0, [], 0, 0
    started = time.perf_counter()
    for pairs, simulations in sizes.items():
        covered = intervals = missing = 0
        for _ in range(simulations):
            overall, preferences = analyse_simulated(con, *simulate_answers(rng, truth, pairs))
            rows = overall[overall["metric"].isin(HEADLINE)].set_index("metric")
            for metric in HEADLINE:
                low, high = rows.loc[metric, "ci_low"], rows.loc[metric, "ci_high"]
                if pd.isna(low):
                    missing += 1
                    continue
                intervals += 1
                covered += int(low <= expected[metric] <= high)
            flagged = preferences[preferences["preferred"] != "none"].set_index("occupation")["preferred"]
            false = int(flagged.index.isin(FAIR).sum())
            fdrs.append(false / len(flagged) if len(flagged) else 0.0)
            found += sum(flagged.get(o) == "female" for o in PLANTED_FEMALE)
            found += sum(flagged.get(o) == "male" for o in PLANTED_MALE)
            planted += len(PLANTED_FEMALE) + len(PLANTED_MALE)
        figures[f"ci_coverage_{pairs}_pairs"] = round(covered / intervals, 4)
        figures[f"ci_missing_{pairs}_pairs"] = missing
        figures[f"simulations_{pairs}_pairs"] = simulations
        covered_all, intervals_all = covered_all + covered, intervals_all + intervals
    con.close()
    return {
        "ci_coverage": round(covered_all / intervals_all, 4),
        "ci_intervals": intervals_all,
        **figures,
        "occupation_fdr": round(float(np.mean(fdrs)), 4),
        "planted_power": round(found / planted, 4),
        "simulations": sum(sizes.values()),
        "coverage_seconds": round(time.perf_counter() - started, 1),
    }
