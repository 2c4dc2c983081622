"""What a scan asks before it asks: the titles within SOC prefixes or a CSV's codes, the name pairs in the seed's
order, the size estimate of `probe scan --dry-run`, and settings refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe.common.errors import UserError
from probe.scanning.setup import ScanSettings, estimate, read_scan_config, resolve_titles, shuffled_pairs, soc_prefixes
from probe.store import db
from probe.store.config import RunConfig

NURSES = [
    ["29-1141.00", "Registered Nurses"],
    ["29-1141.01", "Acute Care Nurses"],
    ["29-1141.02", "Advanced Practice Psychiatric Nurses"],
    ["29-1141.03", "Critical Care Nurses"],
    ["29-1141.04", "Clinical Nurse Specialists"],
]


@pytest.fixture
def con(db_file: Path):
    connection = db.connect(db_file)
    yield connection
    connection.close()


def test_titles_within_a_prefix_or_from_a_csv(con, tmp_path: Path) -> None:
    assert resolve_titles(con, ScanSettings(soc=("29-114",))).values.tolist() == NURSES
    codes = tmp_path / "codes.csv"
    codes.write_text("soc_code\n29-1141.03\n 29-1141.00 \n")
    assert resolve_titles(con, ScanSettings(occupations=str(codes))).values.tolist() == [NURSES[0], NURSES[3]]
    codes.write_text("soc_code\n29-1141.03\n99-9999.00\n")
    with pytest.raises(UserError, match=r"codes.csv line 3: '99-9999.00' is not an O\*NET-SOC code of this database"):
        resolve_titles(con, ScanSettings(occupations=str(codes)))
    with pytest.raises(UserError, match=r"^--soc 98: no O\*NET title has a code starting so$"):
        resolve_titles(con, ScanSettings(soc=("98",)))


def test_the_pairs_are_shuffled_by_the_seed(con) -> None:
    shuffled = shuffled_pairs(con, ScanSettings(pairs=4, seed=0))
    assert shuffled[["pair_id", "position"]].values.tolist() == [[3, 1], [1, 2], [2, 3], [4, 4]]


def test_the_estimate_counts_titles_pairs_and_calls(db_file: Path) -> None:
    size = estimate(RunConfig(db=str(db_file)), ScanSettings(soc=("29-114",), pairs=12))
    # 5 titles x 12 pairs x 2 orders at most; round 1 asks each title 2 pairs
    assert (size.titles, size.pairs, size.first_round, size.most, size.typical) == (5, 12, 20, 120, 60)
    assert size.depths == [2, 3, 4, 5, 6, 8, 10, 12]
    assert estimate(RunConfig(db=str(db_file)), ScanSettings(soc=("29-114",), pairs=12, budget=50)).most == 50


def test_settings_are_checked_by_name(tmp_path: Path) -> None:
    assert soc_prefixes("29, 31-1") == ("29", "31-1")
    with pytest.raises(UserError, match=r"^--soc ',': no SOC code prefix in it"):
        soc_prefixes(",")
    with pytest.raises(UserError, match=r"^--seed -1: a seed is a whole number from 0 up$"):
        ScanSettings(seed=-1)
    config = tmp_path / "RUN.toml"
    config.write_text('backend = "replay"\ntop_k = 3\n')
    with pytest.raises(UserError, match="top_k is a two-stage run's setting, not a scan's"):
        read_scan_config(config)
    config.write_text('backend = "replay"\npairs = 3\n')
    with pytest.raises(UserError, match="pairs: give a scan's pairs as `probe scan --pairs`"):
        read_scan_config(config)
    config.write_text('backend = "replay"\nthreads = 2\n')
    assert read_scan_config(config) == {"backend": "replay", "threads": 2}
