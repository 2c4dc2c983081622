"""`python -m probe` is the `probe` command: importing probe.__main__ runs the command line on sys.argv."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def test_python_m_probe_runs_the_command_on_its_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no.duckdb"
    monkeypatch.setattr(sys, "argv", ["probe", "report", "x", "--db", str(missing)])
    monkeypatch.delitem(sys.modules, "probe.__main__", raising=False)
    with pytest.raises(SystemExit) as exit_:
        from probe import __main__  # noqa: F401  (runs the command line)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"error: {missing}: no such database\n"
    assert not missing.exists()
