"""CPU time of a run over name sets' per-contrast occupation lists and robustness rows (probe/analysis/
contrast_findings.py) on synthetic cells of the shapes of a quick run on the 50 shipped sets in two wordings: 8
categories (sex x race_ethnicity: 35 contrasts, 1 + 6 + 28), 50 sets, 8 occupations, both name orders.

    PYTHONPATH=$PWD .venv/bin/python -m bench.contrast_findings
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd

from probe.analysis.contrast_findings import contrast_occupation_rows, contrast_robustness_rows

SEXES = ("female", "male")
RACES = ("Asian", "Black", "Hispanic", "White")
WORDINGS = ["paper", "synonym"]
CELL_COLUMNS = [
    "condition",
    "attribute",
    "category_a",
    "category_b",
    "occupation",
    "pair_id",
    "name_order",
    "wording",
    "n",
    "n_female",
]


def synthetic_cells(sets: int = 50, occupations: int = 8, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """metrics.sql's contrast_choice_cells (2 answers a cell, 0-2 of them category_a's) and contrast_wording_grants
    (18 attributes a person, a random number granted) of every contrast of the 8 categories."""
    rng = np.random.default_rng(seed)
    joint = [f"{sex} x {race}" for sex in SEXES for race in RACES]
    attributes = {"sex": list(SEXES), "race_ethnicity": list(RACES), "sex x race_ethnicity": joint}
    contrasts = [(name, a, b) for name, values in attributes.items() for a, b in itertools.combinations(values, 2)]
    keys = itertools.product(contrasts, range(occupations), range(1, sets + 1), ("fm", "mf"), WORDINGS)
    rows = [("taxonomy", *contrast, f"occupation {o}", s, order, w, 2) for contrast, o, s, order, w in keys]
    cells = pd.DataFrame(rows, columns=CELL_COLUMNS[:-1]).assign(n_female=rng.integers(0, 3, len(rows)))
    people = itertools.product(WORDINGS, range(1, sets + 1), attributes.items())
    grants = [("stage1", w, name, s, c, 18) for w, s, (name, values) in people for c in values]
    frame = pd.DataFrame(grants, columns=["condition", "wording", "attribute", "set_id", "category", "n"])
    return cells, frame.assign(hits=rng.integers(0, 19, len(frame)))


def measure() -> dict[str, float]:
    cells, grants = synthetic_cells()
    start = time.process_time()
    contrast_occupation_rows(cells)
    occupations = time.process_time() - start
    start = time.process_time()
    contrast_robustness_rows(cells, grants, WORDINGS)
    robustness = time.process_time() - start
    return {
        "contrast_cells": len(cells),
        "contrast_occupations_cpu_seconds": round(occupations, 2),
        "contrast_robustness_cpu_seconds": round(robustness, 2),
    }


if __name__ == "__main__":
    for name, value in measure().items():
        print(f"{name}={value}")
