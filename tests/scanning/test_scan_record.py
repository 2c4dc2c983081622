"""A scan's id (probe/scanning/record.py): a new one per scan, and one given by the user names the report's folder,
so it takes a run id's characters only. Scans stored, resumed and listed: test_scan.py."""

from __future__ import annotations

import pytest

from probe.common.errors import UserError
from probe.scanning.record import check_scan_id, new_scan_id


def test_a_new_scan_id_is_a_valid_one() -> None:
    check_scan_id(new_scan_id())
    check_scan_id(None)  # none given: a new one is made
    check_scan_id("titles-2026.v1_b")


@pytest.mark.parametrize("scan_id", ["../reports", "a b", "-leading", "x" * 65, 7])
def test_a_scan_id_that_cannot_name_a_folder_is_one_line(scan_id: object) -> None:
    with pytest.raises(UserError) as refused:
        check_scan_id(scan_id)
    assert str(refused.value) == (
        f"--scan-id {scan_id!r}: letters, digits, '.', '_', '-', starting with a letter or digit, at most 64 "
        "(it names the report's folder)"
    )
