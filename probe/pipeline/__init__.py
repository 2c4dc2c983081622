"""The one path from settings to findings: taxonomy -> dataset -> backend -> answers -> metrics -> report.

`probe run` and the Python API (`probe.run`) both come here, and so do `probe scan` (probe/scanning/, handed the
runner), `probe batch` (a run answered through files: batch.py in this package), `probe compare` and
`probe gate`. Each step is its own module and gets its
settings from here directly, never through another step: selection.py (taxonomy: name pairs and
attributes), backends/ (the model, from its own settings object), runs.py (the run record), runner.py
(dataset items and answers: stage 2 is built from stage 1's answers), metrics.py, report/.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from probe.analysis.metric_sql import build_instances
from probe.answering import runner, runs
from probe.backends import create_backend
from probe.backends.system_prompt import with_system_prompt
from probe.common import stopping
from probe.common.errors import UserError
from probe.dataset.wordings import check_templates
from probe.pipeline.outcome import RunOutcome, read_outcome
from probe.store import study
from probe.store.config import load_config
from probe.store.db import connect, connect_or_snapshot
from probe.store.spec import RunSpec
from probe.taxonomy.selection import select, stored_selection
from probe.taxonomy.workforce_sources import load_workforce_file

if TYPE_CHECKING:
    import duckdb

    from probe.backends.base import Backend
    from probe.gates import GateResult
    from probe.report import ReportFiles
    from probe.scanning import ScanOutcome, ScanSettings


def settings(flags: Mapping[str, object], config_file: Path | None = None) -> RunSpec:
    """Preset < RUN.toml < flags; a --run-id naming a stored run starts from that run's settings.

    So `probe run --run-id ID` alone resumes a run as it was started; a flag that changes its answers is
    refused by the resume check (runs.check_same_settings).
    """
    config = load_config(flags, config_file)
    if config.options.run_id is None or not Path(config.options.db).exists():
        return config
    con = connect(config.options.db, read_only=True)
    try:
        stored = runs.stored_settings(con, config.options.run_id, given_base_url=config.backend.base_url)
    finally:
        con.close()
    return config if stored is None else load_config(flags, config_file, stored=stored)


def study_configs(config: RunSpec, models: Sequence[str], config_file: Path | None) -> list[RunSpec] | None:
    """The runs of a study (probe/store/study.py; with `--study ID` alone each stored run of the study, resumed
    with its stored settings), or None when the command asks for one run."""
    configs = study.study_configs(config, models, config_file)
    if configs is not None or not config.options.study or config.options.run_id is not None:
        return configs
    options = config.options
    run_ids = runs.study_run_ids(options.db, str(options.study))
    if not run_ids:
        raise UserError(
            f"--study {options.study}: no runs of this study in {options.db}; give its models "
            "(--model A --model B, or [study] in a RUN.toml)"
        )
    return [settings({"run_id": run_id, "db": options.db, "quiet": options.quiet or None}) for run_id in run_ids]


@dataclass(frozen=True)
class Listing:
    """`probe runs`: the runs and scans of a database; `snapshot` when a process was writing it (read from a copy)."""

    runs: pd.DataFrame
    scans: pd.DataFrame
    snapshot: bool


def list_runs(db: Path | str) -> Listing:
    """The runs (runs.list_runs) and scans (scanning.list_scans) in `db`, newest first."""
    from probe.scanning import list_scans

    con, snapshot = connect_or_snapshot(db)  # a run writing it: its progress as of now, from a copy
    try:
        return Listing(runs.list_runs(con), list_scans(con), snapshot)
    finally:
        con.close()


def run(spec: RunSpec, on_start: Callable[[str], None] | None = None) -> RunOutcome:
    """Answer the run's items (resuming a stored run) and analyse them, on one connection to the store; returns the
    run's outcome."""
    from probe.analysis import metrics  # statistics stack: load on use

    con = connect(spec.options.db)
    try:
        run_id = _answer(con, spec, on_start)
        metrics.analyze(con, run_id)
        return read_outcome(con, run_id, str(spec.options.db))
    finally:
        con.close()


def answer(spec: RunSpec, on_start: Callable[[str], None] | None = None, backend: Backend | None = None) -> str:
    """Taxonomy, backend, run record and answers: run (or resume) the probe without analysing it.

    Each step gets its part of the spec: the taxonomy the design, the backend its settings, the runner the options.
    `on_start(run_id)` is called once the run record exists, before the first question: from then on the
    run can be resumed by its id (the CLI prints it there). `backend`: answers from elsewhere (`probe import`)
    instead of the backend the settings name.
    """
    con = connect(spec.options.db)
    try:
        return _answer(con, spec, on_start, backend)
    finally:
        con.close()


def _answer(
    con: duckdb.DuckDBPyConnection,
    spec: RunSpec,
    on_start: Callable[[str], None] | None,
    backend: Backend | None = None,
) -> str:
    """answer() on an open connection (run() analyses on the same one): the stored run or a free id, the selection,
    the backend, the run record (after the backend's input and the templates are checked), the answers."""
    options, settings = spec.options, spec.settings()
    stored = runs.stored_run(con, options.run_id) if options.run_id else None
    if stored is None and options.run_id:
        runs.check_id_free(con, options.run_id, "--run-id", other="scans")
    if stored is not None:
        runs.check_same_settings(settings, stored)
        selection = stored_selection(con, spec.design, str(options.run_id))
    else:
        selection = select(con, spec.design)
    # the backend checks its input (e.g. a replay file), and the templates render, before anything is written
    answering = with_system_prompt(backend or create_backend(spec.backend), spec.backend.system_prompt)
    try:
        answering.check_pairs(selection.pairs, selection.set_members, sets=selection.contests is not None)
        check_templates(selection, spec.design.conditions, answering.prompt_format)
        with stopping.on_signals():
            identity = runs.identity_json(answering)
            if stored is not None:
                run_id = str(stored["run_id"])
                runs.check_same_backend(run_id, json.loads(str(stored["backend_json"])), json.loads(identity))
            else:
                run_id = options.run_id or runs.new_run_id()
                runs.record_run(con, run_id, settings, answering, identity, selection)
            with runs.running(con, run_id, answering):
                if on_start is not None:
                    on_start(run_id)
                runner.answer(
                    con,
                    run_id,
                    answering,
                    identity,
                    selection,
                    conditions=spec.design.conditions,
                    use_cache=answering.cacheable and not options.no_cache,
                    max_failed_share=options.max_failed_share,
                    quiet=options.quiet,
                )
            return run_id
    finally:
        answering.close()


def analyze(db: Path | str, run_id: str, workforce: Path | str | None = None) -> RunOutcome:
    """Compute a run's metrics into the database (replacing earlier ones), in one transaction; returns the run's
    outcome (what the terminal shows). `workforce`: a CSV of labour statistics to compare the run with, checked
    and stored as a source first (probe/taxonomy/workforce_sources.py); default the shipped source."""
    if not Path(db).exists():
        raise UserError(f"{db}: no such database")
    con = connect(db)
    try:
        # DuckDB builds the run's instances (and finds it exists, before a --workforce file is stored) while the
        # statistics stack loads: it leaves the interpreter lock, the imports take a second of the other core
        with ThreadPoolExecutor(max_workers=1) as pool:
            instances = pool.submit(build_instances, con, run_id)
            try:
                from probe.analysis.metrics import analyze as analyze_run  # statistics stack: load on use

                instances.result()
            except BaseException:  # Ctrl-C reaches this thread only: stop the build, which leaving the pool awaits
                con.interrupt()
                raise
        source = None if workforce is None else load_workforce_file(con, Path(workforce))
        analyze_run(con, run_id, source, built=True)
        return read_outcome(con, run_id, str(db))
    finally:
        con.close()


def analyze_if_needed(db: Path | str, run_id: str) -> None:
    """Analyse a run if it has no metrics yet (a run stopped before its analysis)."""
    from probe.pipeline.analysed import ensure_analysed  # statistics stack: load on use

    con = connect(db)
    try:
        ensure_analysed(con, run_id)
    finally:
        con.close()


@dataclass(frozen=True)
class ReportOutcome:
    """What `report` wrote: the report's files, whether the run was analysed first, the Every Eval Ever record and
    model card (with `eee`), the MLflow run's id (with `mlflow`)."""

    files: ReportFiles
    analysed_now: bool
    results: list[Path] = field(default_factory=list)
    mlflow_run: str | None = None


def report(
    db: Path | str,
    run_id: str,
    output: Path | str | None = None,
    *,
    eee: bool = False,
    mlflow: str | None = None,
    on_written: Callable[[ReportOutcome], None] | None = None,
) -> ReportOutcome:
    """Write a run's report: HTML, with its Markdown and JSON summaries beside it (same stem); with `eee` its
    headline findings as an Every Eval Ever record and a model card (probe/integrations/results.py); with `mlflow`
    all of it logged to that MLflow tracking URI.

    `output`: a .html page or a .md summary (the other files beside it); default <db folder>/<run id>/report.html.
    Analyses the run first if it has no metrics. `on_written(outcome)` is called once the files are written, before
    MLflow is asked (the CLI prints their paths there, so a failing tracking server still leaves them named).
    """
    from probe.integrations.mlflow_log import log_report, open_experiment
    from probe.integrations.results import write_results
    from probe.report import write_report  # matplotlib and statistics: load on use

    if mlflow is not None and not mlflow.strip():
        raise UserError("--mlflow: give a tracking URI (a server, sqlite:///FILE or file:FOLDER)")
    # MLflow first: a missing extra or a store MLflow refuses stops the report before anything is written.
    experiment = open_experiment(mlflow) if mlflow is not None else None
    with _analysed(db, [run_id]) as (con, analysed_now):
        files = write_report(con, run_id, Path(output) if output else Path(db).parent / run_id / "report.html")
    outcome = ReportOutcome(files, bool(analysed_now), write_results(files.json) if eee else [])
    if on_written is not None:
        on_written(outcome)
    if experiment is None:
        return outcome
    run = log_report(experiment, files.json, [files.html, files.markdown, files.json, *outcome.results])
    return dataclasses.replace(outcome, mlflow_run=run)


def compare(
    db: Path | str,
    run_ids: Sequence[str],
    output: Path | str | None = None,
    reference: str | None = None,
    name: str | None = None,
    heldout: tuple[int, str, tuple[str, ...] | None] | None = None,
) -> tuple[ReportFiles, list[str]]:
    """Write the comparison of runs (differences to `reference`, default the first) the way `report` writes a
    run's report: its JSON document, and the HTML page and Markdown summary rendered from it.

    `output`: a .html page or a .md summary; default <db folder>/compare-<name or id-id-...>.html. Analyses
    the runs that have no metrics yet; returns the files and those runs.
    """
    from probe.compare import write_comparison  # matplotlib and statistics: load on use

    with _analysed(db, run_ids) as (con, analysed_now):
        default = Path(db).parent / f"compare-{name or '-'.join(run_ids)}.html"
        return write_comparison(con, run_ids, Path(output) if output else default, reference, heldout), analysed_now


@contextmanager
def _analysed(db: Path | str, run_ids: Sequence[str | None]) -> Iterator[tuple[duckdb.DuckDBPyConnection, list[str]]]:
    """A connection to `db` whose runs `run_ids` (None skipped) are analysed, and those analysed just now; a
    snapshot while a run writes."""
    from probe.pipeline.analysed import ensure_analysed  # statistics stack: load on use

    db = Path(db)
    if not db.exists():
        raise UserError(f"{db}: no such database")
    con, snapshot = connect_or_snapshot(db, read_only=False)  # a run writing it: read as of now, from a copy
    try:
        analysed = [
            run_id for run_id in run_ids if run_id is not None and ensure_analysed(con, run_id, being_written=snapshot)
        ]
        yield con, analysed
    finally:
        con.close()


def gate(
    db: Path | str,
    run_id: str,
    policy: Path | str,
    baseline: str | None = None,
    output: Path | str | None = None,
    junit: Path | str | None = None,
) -> GateResult:
    """`probe gate`: the policy's verdicts for a run (probe/gates/), written as gate.json and gate.md in `output`
    (default <db folder>/<run id>/) and as JUnit XML where asked. Analyses the runs first if they have no metrics.
    """
    from probe.gates import check_gates, load_policy  # statistics stack: load on use

    rules = load_policy(policy)  # a policy mistake is reported before the database is opened
    folder = Path(output) if output else Path(db).parent / run_id
    # where the files go is checked before any is written: a JUnit path that is a folder failed after gate.json
    if folder.exists() and not folder.is_dir():
        raise UserError(f"-o {folder}: is a file; name a folder for gate.json and gate.md")
    if junit is not None and Path(junit).is_dir():
        raise UserError(f"--junit {junit}: is a folder; name the XML file to write (gates.xml)")
    with _analysed(db, [run_id, baseline]) as (con, _):
        return check_gates(con, run_id, rules, baseline, folder, Path(junit) if junit else None)


def gate_plan(db: Path | str, run_id: str, policy: Path | str, baseline: str | None = None) -> list[dict]:
    """`probe gate --plan`: the name pairs each gate needs for 80% power, from a pilot run."""
    from probe.gates import load_policy, plan

    rules = load_policy(policy)
    with _analysed(db, [run_id, baseline]) as (con, _):
        return plan(con, run_id, rules, baseline)


def scan(
    config: RunSpec,
    scan_settings: ScanSettings,
    scan_id: str | None = None,
    on_start: Callable[[str], None] | None = None,
    on_reopen: Callable[[int, int], None] | None = None,
    report: Path | bool = True,
) -> ScanOutcome:
    """`probe scan`: adaptive rounds over O*NET titles (probe/scanning/rounds.py), each round answered by the runner;
    then its report (to the folder `report` names; True: <db folder>/<scan id>; False: none) and its outcome."""
    from probe import scanning  # the scan's statistics: load on use

    finished = scanning.scan(
        config, scan_settings, scan_id, runner.answer_pending, on_start=on_start, on_reopen=on_reopen
    )
    con = connect(config.options.db)
    try:
        folder = Path(config.options.db).parent / finished if report is True else report
        files = scanning.write_scan_report(con, finished, folder) if folder else {}
        return scanning.scan_outcome(con, finished, config, files)
    finally:
        con.close()
