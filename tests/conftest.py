"""Shared fixtures. Tests may read ../shared (the O*NET release and name lists); the product never does."""

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
ONET_RELEASE = SHARED / "data" / "onet" / "db_30_0_text"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh database path; probe.db.connect creates and seeds it on first use."""
    return tmp_path / "probe.duckdb"


@pytest.fixture
def onet_release() -> Path:
    if not ONET_RELEASE.is_dir():
        pytest.skip(f"O*NET release not found at {ONET_RELEASE}")
    return ONET_RELEASE
