"""`probe scan`: an adaptive search for gendered occupations over all O*NET titles, stored in DuckDB (scans,
scan_titles, scan_pairs, scan_rounds, scan_decisions, scan_results; its items and answers under the scan id),
resumable and carried on by a larger budget. Not `probe/scan/`: `probe.scan` is the API's function.

- setup.py: the titles, the seeded pair order, the size and the dry-run estimate;
- record.py: the scans row, the resume checks, the listing in `probe runs`;
- rounds.py: the rounds themselves (ask, decide by the anytime-valid rules of probe/analysis/scan_rules.py and
  sequential.py, store), answered by the runner the pipeline hands it;
- report.py: scan.json, scan.md, the hierarchy figure and the confirmation CSV.

Enters: a RunConfig (the backend's settings), ScanSettings, the runner's answer function (from the pipeline).
Leaves: the scan tables and the scan report.
"""
