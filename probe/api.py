"""The Python API (DESIGN.md section 9): `probe.run(...)` and `probe.open_run(...)` return a `Run`;
`probe.scan(...)` and `probe.open_scan(...)` a `Scan`; `probe.gate(...)` a `GateResult`; `probe.schema(...)` the
JSON Schema of a written document.

Keyword names are the RUN.toml settings (probe.store.spec.SETTINGS, parsed into a RunSpec: design, backend,
options), and a run goes through the same pipeline as `probe run` (probe.pipeline), so a notebook and the command
line store the same things. A scan takes the backend's settings and the scan's (probe.scanning.ScanSettings) and
goes through `probe scan`'s pipeline (probe.pipeline.scan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from probe import pipeline
from probe.common.errors import UserError
from probe.scanning import check_scan_id, resolve_settings
from probe.store.db import DEFAULT_DB, connect, connect_or_snapshot

if TYPE_CHECKING:
    from probe.gates import GateResult

# answers(): the item (what was asked, prompt included) and the stored answer, one row per item.
_ANSWERS_SQL = """
SELECT i.item_id, i.stage, i.qtype, i.condition, i.pair_id, i.name_order, i.first_name, i.second_name,
       i.occupation, i.subject, i.category, i.attribute, i.wording, i.prompt, i.options_json,
       a.label, a.raw, a.scores_json, a.decided_by, a.error, a.cached
FROM items i LEFT JOIN answers a USING (run_id, item_id)
WHERE i.run_id = ?
ORDER BY i.seq
"""
# What _check_exists looks for: the table and its key column.
STORED = {"run": ("runs", "run_id"), "scan": ("scans", "scan_id")}


@dataclass(frozen=True)
class Run:
    """A stored run: its id and database. Every method reads the database afresh."""

    run_id: str
    db: str = str(DEFAULT_DB)

    def metrics(self, contrast: str | Sequence[str] | None = None) -> pd.DataFrame:
        """The run's metrics: condition, scope, key, metric, value, ci_low, ci_high, n (analysed if needed).

        A run over name sets has findings per contrast (DESIGN.md section 11): `contrast` = an attribute
        ("race_ethnicity", "sex x race_ethnicity") gives every contrast of it, two categories (["male x Black",
        "male x White"], in either order) that contrast: its rows of contrast_metrics (condition, attribute,
        category_a, category_b, metric, estimate, ci_low, ci_high, p_value, sets, n, comparisons, method, flagged;
        category_a is the first in alphabetical order, a preference is its share; metrics in docs/groups.md)."""
        if contrast is None:
            return self._query(
                "SELECT condition, scope, key, metric, value, ci_low, ci_high, n FROM metrics WHERE run_id = ? "
                "ORDER BY condition, scope, key, metric",
                analysed=True,
            )
        return self._contrast_rows("contrast_metrics", "metric", contrast)

    def occupations(self, contrast: str | Sequence[str]) -> pd.DataFrame:
        """A run over name sets' occupation list per contrast (`contrast` as in metrics()): its contrast_occupations
        rows (condition, attribute, category_a, category_b, occupation, n, sets, sets_a, sets_b, share_a, lean_a,
        ci_low, ci_high, ci_level, p_value, q_value, preferred: the category preferred, NULL where none; the sign
        test over the sets leaning each way, Benjamini-Hochberg over the contrast's occupations)."""
        return self._contrast_rows("contrast_occupations", "occupation", contrast)

    def robustness(self, contrast: str | Sequence[str]) -> pd.DataFrame:
        """A run over name sets' findings across its wordings per contrast (`contrast` as in metrics()): the
        contrast_robustness rows (preference and grant_gap per wording and crossed, with the verdict; none for a
        run in one wording)."""
        return self._contrast_rows("contrast_robustness", "metric, scope, key", contrast)

    def _contrast_rows(self, table: str, order: str, contrast: str | Sequence[str]) -> pd.DataFrame:
        """`table`'s rows of an attribute's contrasts (`contrast` an attribute) or of one contrast (two categories,
        either order); a UserError naming what the run has where it has none."""
        rows = self._query(
            f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = ? ORDER BY condition, attribute, category_a, "
            f"category_b, {order}",
            analysed=True,
        )
        if isinstance(contrast, str):
            chosen = rows[rows["attribute"] == contrast]
            known = sorted(set(rows["attribute"]))
        else:
            pair = sorted(contrast)
            if len(pair) != 2:
                raise UserError(f"contrast: {list(contrast)!r} is not two categories")
            chosen = rows[(rows["category_a"] == pair[0]) & (rows["category_b"] == pair[1])]
            known = sorted(set(rows["category_a"]) | set(rows["category_b"]))
        if chosen.empty:
            raise UserError(
                f"contrast: run {self.run_id} has no contrast {contrast!r} in {table} (its attributes and categories: "
                f"{', '.join(known) or f'none in {table}: none for a run over name pairs; robustness needs wordings'})"
            )
        return chosen.reset_index(drop=True)

    def workforce(self) -> pd.DataFrame:
        """Each occupation's woman's share of single-subject picks beside the BLS workforce's share of women, per
        condition: model_share, ci_low, ci_high, method, workforce_share, departure, versus ('more' / 'less' / 'as'
        gendered than the workforce)."""
        return self._query(
            "SELECT * EXCLUDE (run_id) FROM workforce_occupations WHERE run_id = ? ORDER BY condition, occupation",
            analysed=True,
        )

    def workforce_fit(self) -> pd.DataFrame:
        """Per condition the rank and linear correlations with the workforce and the amplification slope (1 mirrors
        the workforce) and adjusted_slope (the position in the fit), each with its interval."""
        return self._query(
            "SELECT * EXCLUDE (run_id) FROM workforce_fit WHERE run_id = ? ORDER BY condition, statistic",
            analysed=True,
        )

    def adverse_impact(self) -> pd.DataFrame:
        """The adverse-impact table (DESIGN.md section 11): per condition, attribute, scope, key, category and rate
        kind the rate, the impact ratio to the highest rate with its 95% interval and test over name sets, q (per
        occupation), the four-fifths flag and the unknown answers (analysed if needed)."""
        return self._query(
            "SELECT * EXCLUDE (run_id) FROM adverse_impact WHERE run_id = ? "
            "ORDER BY condition, attribute, rate_kind, scope DESC, key, category",
            analysed=True,
        )

    def ranking(self) -> pd.DataFrame:
        """A run over name sets' categories ranked per condition and attribute (docs/groups.md): the category_metrics
        rows of `strength` (Bradley-Terry over the contests) and `kway_strength` (Luce over the K-way choice's top
        picks), rank 1 the strongest, each with its 95% interval clustered by name set and p of strength = 1 / K;
        empty for a run over name pairs (analysed if needed)."""
        return self._query(
            "SELECT * EXCLUDE (run_id) FROM category_metrics WHERE run_id = ? AND metric IN ('strength', "
            "'kway_strength') ORDER BY condition, attribute, metric, rank",
            analysed=True,
        )

    def answers(self) -> pd.DataFrame:
        """Every item of the run with its answer: stage, qtype, condition, names, wording, prompt, options, label,
        scores."""
        return self._query(_ANSWERS_SQL)

    def report(self, path: str | Path, *, eee: bool = False, mlflow: str | None = None) -> Path:
        """Write the audit report to `path` (.html, or .md for Markdown; the other formats beside it), as `probe
        report` does: `eee=True` adds the Every Eval Ever record and model card, `mlflow=URI` logs it all there."""
        files = pipeline.report(self.db, self.run_id, path, eee=eee, mlflow=mlflow).files
        return files.markdown if Path(path).suffix.lower() == ".md" else files.html

    def export(self, file_format: str, folder: str | Path) -> list[Path]:
        """Write the run in `file_format` (parquet, csv, hf-dataset, lm-eval, inspect) to `folder`, as `probe export`
        does; returns the files written."""
        from probe.pipeline.exports import export

        return export(self.db, self.run_id, file_format, folder)

    def _query(self, sql: str, *, analysed: bool = False) -> pd.DataFrame:
        _check_exists("run", self.run_id, self.db)
        if analysed:
            pipeline.analyze_if_needed(self.db, self.run_id)
        return _read(self.db, sql, self.run_id)


def run(**settings: object) -> Run:
    """Run (or, with an existing run_id, resume) a probe and analyse it, as `probe run` does.

    `settings` are RUN.toml keys: preset, pairs, names, occupations, top_k, conditions, backend, model,
    answers, run_id, db, ... (config=PATH reads a RUN.toml first). Progress bars are off unless quiet=False.
    """
    config_file = settings.pop("config", None)
    settings.setdefault("quiet", True)
    config = pipeline.settings(settings, Path(str(config_file)) if config_file else None)
    return Run(pipeline.run(config).run_id, config.options.db)


def open_run(run_id: str, db: str | Path = DEFAULT_DB) -> Run:
    """The stored run `run_id` of database `db`."""
    _check_exists("run", run_id, db)
    return Run(run_id, str(db))


def import_run(
    tool: str, files: Sequence[str | Path], run_id: str, db: str | Path = DEFAULT_DB, model: str | None = None
) -> Run:
    """A run of the answers another tool (lm-eval, inspect) recorded for `probe export`ed items, analysed, as
    `probe import TOOL FILES --run-id ID` makes it (the same files again: resumed)."""
    from probe.pipeline.exports import import_run as import_answers

    return Run(import_answers(tool, [Path(file) for file in files], run_id, db, model).run_id, str(db))


def import_decisions(
    file: str | Path, run_id: str, db: str | Path = DEFAULT_DB, model: str | None = None, period: str | None = None
) -> Run:
    """A run of decisions made elsewhere (a decisions CSV or Parquet file), analysed, as `probe import decisions
    FILE --run-id ID` makes it; `Run.adverse_impact()` holds its table."""
    from probe.pipeline.decisions import import_decisions as import_file

    return Run(import_file(Path(file), run_id, db, model, period).run_id, str(db))


@dataclass(frozen=True)
class Scan:
    """A stored scan (`probe scan`): its id and database. Every method reads the database afresh."""

    scan_id: str
    db: str = str(DEFAULT_DB)

    def results(self) -> pd.DataFrame:
        """One row per title (scan_results): soc_code, title, pairs, share, ci_low, ci_high, ci_level, e_value,
        flagged, preferred, stopped, stopped_round; no rows before the scan finished."""
        return self._query("SELECT * EXCLUDE (scan_id) FROM scan_results WHERE scan_id = ? ORDER BY soc_code")

    def rounds(self) -> pd.DataFrame:
        """One row per round (scan_rounds): round, depth, titles, calls, status, started_at, decided_at."""
        return self._query("SELECT * EXCLUDE (scan_id) FROM scan_rounds WHERE scan_id = ? ORDER BY round")

    def report(self, path: str | Path) -> Path:
        """Write the report files `probe scan` writes (scan.md, scan.json, scan_groups.svg, flagged_occupations.csv)
        to the folder `path`; returns scan.md's path."""
        from probe.scanning import write_scan_report  # matplotlib: load on use

        if self.results().empty:
            raise UserError(
                f"{self.scan_id}: the scan has no results yet; `probe scan --scan-id {self.scan_id} --db {self.db}` "
                "finishes it"
            )
        con = connect(self.db, read_only=True)
        try:
            return write_scan_report(con, self.scan_id, Path(path))["scan.md"]
        finally:
            con.close()

    def _query(self, sql: str) -> pd.DataFrame:
        _check_exists("scan", self.scan_id, self.db)
        return _read(self.db, sql, self.scan_id)


def scan(**settings: object) -> Scan:
    """Run a scan as `probe scan` does; with an existing scan_id resume it, or carry it on with a larger budget.

    `settings`: the backend's (backend, model, base_url, answers, device, dtype, decoding, ... as RUN.toml names
    them), the scan's (occupations, soc, pairs, names, budget, seed: probe.scanning.ScanSettings), scan_id,
    db, threads, concurrency, batch_size, no_cache, quiet, max_failed_share. A stored scan takes the settings not
    given from its record (budget=None given: no limit). Progress bars are off unless quiet=False.
    """
    scan_id = settings.pop("scan_id", None)
    check_scan_id(scan_id)
    settings.setdefault("quiet", True)
    config, scan_settings = resolve_settings(settings, scan_id)
    return Scan(pipeline.scan(config, scan_settings, scan_id, report=False).scan_id, config.options.db)


def open_scan(scan_id: str, db: str | Path = DEFAULT_DB) -> Scan:
    """The stored scan `scan_id` of database `db`."""
    _check_exists("scan", scan_id, db)
    return Scan(scan_id, str(db))


def gate(
    run_id: str,
    policy: str | Path,
    baseline: str | None = None,
    db: str | Path = DEFAULT_DB,
    output: str | Path | None = None,
    junit: str | Path | None = None,
) -> GateResult:
    """`probe gate`: the policy's verdicts for a stored run (`result.outcome`, `result.verdicts`,
    `result.exit_code()`), with gate.json and gate.md written to `output` (default beside the run)."""
    _check_exists("run", run_id, db)
    if baseline is not None:
        _check_exists("run", baseline, db)
    return pipeline.gate(db, run_id, policy, baseline, output, junit)


def schema(document: str) -> dict[str, object]:
    """The published JSON Schema of `document` ("report": report.json, "compare": compare.json), as
    `probe schema` prints it; every document the probe writes validates against it."""
    from probe.report.schema import published_schema

    return published_schema(document)


def _read(db: str, sql: str, key: str) -> pd.DataFrame:
    """`sql` with the one parameter `key`, on a read-only connection to `db` (a copy while a run writes it)."""
    con, _ = connect_or_snapshot(db)
    try:
        return con.execute(sql, [key]).df()
    finally:
        con.close()


def _check_exists(kind: str, key: object, db: str | Path) -> None:
    """An id that is not a string, or names no run (scan) of `db`, is the caller's mistake: say so, not DuckDB."""
    table, column = STORED[kind]
    if not isinstance(key, str):
        raise UserError(f"{column}: expected a {kind} id (a string), got {key!r}")
    if not _read(str(db), f"SELECT count(*) AS n FROM {table} WHERE {column} = ?", key)["n"][0]:
        raise UserError(f"{key}: no such {kind} in {db}")
