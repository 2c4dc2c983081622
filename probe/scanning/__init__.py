"""`probe scan`: an adaptive search for gendered occupations over all O*NET titles, stored in DuckDB (scans,
scan_titles, scan_pairs, scan_rounds, scan_decisions, scan_results; its items and answers under the scan id),
resumable and carried on by a larger budget. Not `probe/scan/`: `probe.scan` is the API's function.

- setup.py: the titles, the seeded pair order, the size and the dry-run estimate;
- record.py: the scans row, the resume checks, the listing in `probe runs`;
- rounds.py: the rounds themselves (ask, decide by the anytime-valid rules of probe/analysis/scan_rules.py and
  sequential.py, store), answered by the runner the pipeline hands it;
- report.py: scan.json, scan.md, the hierarchy figure and the confirmation CSV;
- outcome.py: what a finished scan leaves the user (flagged titles, calls, report files, the confirmation command).

The CLI and the API import this front, not the modules behind it.

Enters: a RunSpec (its backend part and its options), ScanSettings, the runner's answer function (from the pipeline).
Leaves: the scan tables and the scan report.
"""

from probe.scanning.record import check_scan_id, list_scans, resolve_settings, with_stored
from probe.scanning.rounds import load_state, scan
from probe.scanning.setup import (
    BACKEND_FIELDS,
    SCAN_RUN_FIELDS,
    TYPICAL_CALLS_PER_TITLE,
    ScanSettings,
    estimate,
    read_scan_config,
    soc_prefixes,
)

__all__ = [
    "BACKEND_FIELDS",
    "SCAN_RUN_FIELDS",
    "TYPICAL_CALLS_PER_TITLE",
    "ScanOutcome",
    "ScanSettings",
    "check_scan_id",
    "confirmation_csv",
    "estimate",
    "list_scans",
    "load_state",
    "read_scan_config",
    "resolve_settings",
    "scan",
    "scan_outcome",
    "soc_prefixes",
    "with_stored",
    "write_scan_report",
]


def __getattr__(name: str) -> object:
    """write_scan_report and confirmation_csv (report.py), ScanOutcome and scan_outcome (outcome.py), imported on
    first use: matplotlib loads only then."""
    if name in ("confirmation_csv", "write_scan_report"):
        from probe.scanning import report

        return getattr(report, name)
    if name in ("ScanOutcome", "scan_outcome"):
        from probe.scanning import outcome

        return getattr(outcome, name)
    raise AttributeError(f"module 'probe.scanning' has no attribute {name!r}")
