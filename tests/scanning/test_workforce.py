"""The scan's workforce section: each scanned title with a workforce share beside the model's, the others left
out, and the correlations over the titles (no interval from four)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probe.scanning.workforce import scan_workforce
from probe.store import db

# the first four codes of the shipped workforce table with a share of women: 29.2, 29.2, 35.4 and 49.7%
CODES = ["11-1011.00", "11-1011.03", "11-1021.00", "11-2011.00"]


@pytest.fixture
def con(db_file: Path):
    connection = db.connect(db_file)
    yield connection
    connection.close()


def test_titles_with_a_workforce_share_are_set_beside_it(con) -> None:
    shares = [0.2, 0.4, 0.6, 0.8, 0.5, 0.5]
    results = pd.DataFrame(
        {
            "soc_code": [*CODES, "11-2021.00", "99-9999.00"],
            "title": list("abcdef"),
            "share": shares,
            "ci_low": [share - 0.1 for share in shares],
            "ci_high": [share + 0.1 for share in shares],
        }
    )
    observed = np.array([[share, share] for share in shares])
    observed[4] = np.nan  # 11-2021.00 (58.9%) asked no pair: left out, as the code without a workforce share
    section = scan_workforce(con, results, observed)
    assert section["n_occupations"] == 4
    assert [(row["occupation"], row["workforce_share"], row["versus"]) for row in section["occupations"]] == [
        ("a", pytest.approx(0.292), "as"),
        ("b", pytest.approx(0.292), "less"),
        ("c", pytest.approx(0.354), "less"),
        ("d", pytest.approx(0.497), "less"),
    ]
    assert section["spearman"]["estimate"] == pytest.approx(3 / math.sqrt(10))  # ranks 1-4 against 1.5, 1.5, 3, 4
    assert section["spearman"]["ci_low"] is None  # four occupations: too few for an interval
    assert scan_workforce(con, results.iloc[5:], observed[5:]) is None
