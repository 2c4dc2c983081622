"""The `probe run` a scan prints to confirm its flagged titles: the scan's backend settings as flags (a URL's secrets
masked), the rest from its backend.toml, and its database where that is not the default."""

from __future__ import annotations

from pathlib import Path

from probe.scanning.outcome import _confirm_command
from probe.store.config import RunConfig


def test_the_confirmation_run_carries_the_scans_backend_and_database() -> None:
    served = RunConfig(backend="openai", model="m", base_url="http://user:secret@host:8000/v1?key=abc", db="x.duckdb")
    report = {"flagged_occupations.csv": Path("out/f.csv"), "backend.toml": Path("out/backend.toml")}
    assert _confirm_command(served, report) == [
        *("probe", "run", "--occupations", "out/f.csv", "--backend", "openai", "--model", "m"),
        *("--base-url", "http://***@host:8000/v1?key=***", "--decoding", "score"),
        *("--config", "out/backend.toml", "--db", "x.duckdb"),
    ]
    replay = RunConfig(backend="replay", answers="a.csv")
    assert _confirm_command(replay, {"flagged_occupations.csv": Path("f.csv")}) == [
        *("probe", "run", "--occupations", "f.csv", "--backend", "replay", "--answers", "a.csv"),
        *("--decoding", "score"),
    ]
