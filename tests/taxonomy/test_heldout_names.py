"""The held-out name pairs' rule on toy counts: one-sex names of the working-age years ranked by births, paired by
rank, leaving out the shipped names, the hand-excluded ones and the answer words."""

from __future__ import annotations

import pandas as pd
import pytest

from probe.taxonomy import heldout_names


def test_the_most_frequent_one_sex_names_not_shipped_are_paired_by_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heldout_names, "PAIRS", 2)
    counts = pd.DataFrame(
        [
            (1960, "F", "Ann", 500),  # shipped: left out
            (1960, "F", "Beth", 400),  # hand-excluded too
            (1960, "F", "Iris", 350),
            (1990, "F", "Cora", 300),
            (1960, "F", "Dana", 900),  # 900 of 1,000 births female: not one sex
            (1960, "M", "Dana", 100),
            (1940, "F", "Edna", 5000),  # born before 1950: these births do not count
            (1970, "F", "Edna", 10),
            (1960, "F", "Grace", 800),  # hand-excluded
            (1960, "M", "Carl", 700),
            (1999, "M", "Dean", 600),
            (2000, "M", "Eli", 9000),  # born after 1999
            (1960, "M", "Bob", 650),  # shipped
        ],
        columns=["year", "sex", "name", "n"],
    )
    shipped = pd.DataFrame({"pair_id": [1], "female": ["ann"], "male": ["Bob"]})
    pairs = heldout_names.heldout_pairs(counts, shipped)
    assert pairs.to_dict("list") == {"pair_id": [1, 2], "female": ["Iris", "Cora"], "male": ["Carl", "Dean"]}
