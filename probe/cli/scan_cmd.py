"""`probe scan`: adaptive search for gendered occupations over O*NET titles (probe/scan.py)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from probe import pipeline, scan_setup
from probe.answering import plan
from probe.backends import backend_info
from probe.cli.app import app
from probe.cli.run_cmd import (
    AnswersOption,
    BackendOption,
    BaseUrlOption,
    ConcurrencyOption,
    DecodingOption,
    DeviceOption,
    DtypeOption,
    ModelOption,
    NamesOption,
    PairsOption,
    RunDbOption,
    ThreadsOption,
)
from probe.common.errors import UserError
from probe.common.redact import MASK
from probe.scan_setup import ScanSettings
from probe.store.config import RUN_ID, RunConfig
from probe.store.db import DEFAULT_DB, connect


def _resume_command(scan_id: str, db: str) -> str:
    return shlex.join(["probe", "scan", "--scan-id", scan_id, "--db", db])


def _soc_prefixes(text: str | None) -> tuple[str, ...]:
    prefixes = tuple(part.strip() for part in (text or "").split(",") if part.strip())
    for prefix in prefixes:
        if not all(character.isdigit() or character in "-." for character in prefix):
            raise UserError(f"--soc {prefix!r}: a SOC code prefix is digits, '-' and '.' (e.g. 29 or 29-1)")
    return prefixes


@app.command("scan")
def scan_command(
    occupations: Annotated[
        str | None, typer.Option("--occupations", help="all (default: every O*NET title) or a CSV with soc_code.")
    ] = None,
    soc: Annotated[
        str | None, typer.Option("--soc", help="Only titles whose SOC code starts so: 29 (a major group), 29-1,...")
    ] = None,
    budget: Annotated[int | None, typer.Option("--budget", help="Most model calls (default: no limit).", min=1)] = None,
    pairs: PairsOption = None,
    names: NamesOption = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Shuffles the name pairs' order (default 0).")] = None,
    backend: BackendOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    answers: AnswersOption = None,
    decoding: DecodingOption = None,
    threads: ThreadsOption = None,
    concurrency: ConcurrencyOption = None,
    scan_id: Annotated[str | None, typer.Option("--scan-id", help="Scan id; an existing one is resumed.")] = None,
    db: RunDbOption = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Report folder (default: <db folder>/<scan id>).")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ask the model even when cached.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bars.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print titles, rounds, model calls and an estimated time; write nothing.")
    ] = False,
) -> None:
    """Find the titles a model picks one gender for, in rounds: flagged with FDR <= 0.05 however they went."""
    from probe.scan_report import write_scan_report

    given = dict(
        backend=backend, model=model, base_url=base_url, device=device, dtype=dtype, answers=answers, decoding=decoding
    )
    scan_given = dict(
        occupations=occupations, soc=_soc_prefixes(soc) or None, pairs=pairs, names=names, budget=budget, seed=seed
    )
    if scan_id is not None and not RUN_ID.fullmatch(scan_id):
        raise UserError(
            f"--scan-id {scan_id!r}: letters, digits, '.', '_', '-', starting with a letter or digit, at most 64 "
            "(it names the report's folder)"
        )
    database = db or str(DEFAULT_DB)
    stored = _stored(database, scan_id)
    if stored is not None:
        stored_backend, stored_scan = stored
        if base_url is None and MASK in str(stored_backend.get("base_url") or ""):
            raise UserError(
                f"--scan-id {scan_id}: the scan's --base-url held credentials or query values, which are never "
                "stored; give --base-url again to resume it"
            )
        given = {name: stored_backend.get(name) if value is None else value for name, value in given.items()}
        scan_given = {
            name: getattr(stored_scan, name) if value is None else value for name, value in scan_given.items()
        }
    config = pipeline.settings(
        {
            **given,
            "threads": threads,
            "concurrency": concurrency,
            "db": database,
            "no_cache": no_cache or None,
            "quiet": quiet or None,
        }
    )
    settings = ScanSettings(**{name: value for name, value in scan_given.items() if value is not None})
    if dry_run:
        for line in _plan_lines(config, settings):
            typer.echo(line)
        return

    started: list[str] = []

    def announce(started_id: str) -> None:
        started.append(started_id)
        typer.echo(
            f"scan {started_id} in {database}; if it stops, resume it with: {_resume_command(started_id, database)}",
            err=True,
        )

    try:
        finished = pipeline.scan(config, settings, scan_id, on_start=announce)
    except KeyboardInterrupt:
        if started:
            typer.echo(f"\ninterrupted; resume it with: {_resume_command(started[0], database)}", err=True)
        raise typer.Exit(130) from None
    con = connect(database)
    try:
        folder = output or Path(database).parent / finished
        paths = write_scan_report(con, finished, folder)
        results = con.execute(
            "SELECT title, share, ci_low, ci_high, e_value, preferred FROM scan_results WHERE scan_id = ? AND flagged "
            "ORDER BY abs(share - 0.5) DESC, soc_code",
            [finished],
        ).fetchall()
        calls = con.execute("SELECT count(*) FROM items WHERE run_id = ?", [finished]).fetchone()[0]
    finally:
        con.close()
    typer.echo(f"{len(results)} titles flagged after {calls:,} model calls (FDR <= 0.05, e-BH):")
    for title, share, low, high, e_value, preferred in results:
        typer.echo(f"  {title}: share {share:.2f} ({low:.2f}-{high:.2f}), e-value {e_value:.3g}, {preferred}")
    typer.echo(f"report: {paths['scan.md']} (scan.json, scan_groups.svg beside it)")
    if results:
        confirm = ["probe", "run", "--occupations", str(paths["flagged_occupations.csv"]), "--backend", config.backend]
        if config.model:
            confirm += ["--model", config.model]
        typer.echo(f"confirm with a full two-stage run: {shlex.join(confirm)}")
    typer.echo(finished)


def _stored(database: str, scan_id: str | None) -> tuple[dict[str, object], ScanSettings] | None:
    """The stored scan's backend flags and scan settings, when --scan-id names one."""
    from probe import scan as scanning

    if scan_id is None or not Path(database).exists():
        return None
    con = connect(database, read_only=True)
    try:
        stored = scanning.stored_scan(con, scan_id)
    finally:
        con.close()
    return None if stored is None else scanning.stored_settings(stored)


def _plan_lines(config: RunConfig, settings: ScanSettings) -> list[str]:
    """The dry run: titles, pairs, rounds, calls (round 1, at most, typical) and the time they take."""
    estimate = scan_setup.estimate(config, settings)
    rate = backend_info(config.backend).documented_rates[1]
    lines = [
        f"titles: {estimate.titles:,}; name pairs: {estimate.pairs} (both orders); rounds up to depths "
        f"{', '.join(map(str, estimate.depths))} pairs a title",
        f"model calls: round 1 {estimate.first_round:,}; at most {estimate.most:,}"
        + (" (the budget)" if settings.budget is not None and estimate.most == settings.budget else " (every pair)"),
        f"typical: about {estimate.typical:,} ({scan_setup.TYPICAL_CALLS_PER_TITLE} a title on the simulated model "
        "of BENCHMARKS.md; a model that stereotypes more titles needs more)",
        f"estimated time with {config.backend} at {rate:.3g} calls/s (BENCHMARKS.md): round 1 "
        f"{plan.duration(estimate.first_round / rate)}, typical {plan.duration(estimate.typical / rate)}, "
        f"at most {plan.duration(estimate.most / rate)}",
    ]
    return lines
