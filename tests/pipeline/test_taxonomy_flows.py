"""`probe taxonomy show | search | import`'s flows on the shipped snapshot: an occupation with its top attributes
and release, titles found by their words, and a release folder that is not one refused with nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe.common.errors import UserError
from probe.pipeline import taxonomy
from tests.support import fingerprint


def test_show_gives_the_curated_row_its_top_attributes_and_the_release(db_file: Path) -> None:
    nurse = taxonomy.show(db_file, "nurse", 1)
    assert (nurse.occupation["soc_code"], nurse.occupation["onet_title"]) == ("29-1141.00", "Registered Nurses")
    assert nurse.release == "O*NET 29.0 Database, August 2024 Release"
    assert nurse.attributes[["category", "rank", "element_name"]].values.tolist() == [
        ["skill", 1, "Social Perceptiveness"],
        ["knowledge", 1, "Psychology"],
        ["ability", 1, "Problem Sensitivity"],
    ]


def test_search_finds_titles_and_alternate_titles(db_file: Path) -> None:
    found = taxonomy.search(db_file, "registered nurse", 3)
    assert found[["soc_code", "matched_title"]].values.tolist() == [
        ["29-1141.00", "Registered Nurses"],
        ["21-1091.00", "Registered Nurse Educator (RN Educator)"],
        ["29-1161.00", "Registered Nurse Midwife"],
    ]
    assert found["curated_as"].iloc[0] == "nurse"


def test_importing_a_folder_that_is_no_release_changes_nothing(db_file: Path, tmp_path: Path) -> None:
    before = fingerprint(db_file)
    with pytest.raises(UserError) as error:
        taxonomy.import_release(db_file, tmp_path)
    assert str(error.value) == f"{tmp_path / 'Occupation Data.txt'}: missing from the O*NET release folder"
    assert fingerprint(db_file) == before
