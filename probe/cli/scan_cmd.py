"""`probe scan`: adaptive search for gendered occupations over O*NET titles (probe/scanning/)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from probe import pipeline
from probe.cli.app import app
from probe.cli.options import (
    AnswersOption,
    BackendOption,
    BaseUrlOption,
    ConcurrencyOption,
    DecodingOption,
    DeviceOption,
    DtypeOption,
    MaxFailedShareOption,
    ModelOption,
    NamesOption,
    NoCacheOption,
    PairsOption,
    RunDbOption,
    ThreadsOption,
)
from probe.common.errors import UserError
from probe.common.escape import terminal_text
from probe.pipeline.front import RunSpec, backend_info, plan, scanning


def _resume_command(scan_id: str, db: str, config_file: Path | None = None) -> str:
    """The command that resumes the scan (with the RUN.toml it was given: its run settings are not stored), safe to
    print on a terminal."""
    given = ["--config", str(config_file)] if config_file is not None else []
    return terminal_text(shlex.join(["probe", "scan", "--scan-id", scan_id, "--db", db, *given]))


@app.command("scan")
def scan_command(
    occupations: Annotated[
        str | None, typer.Option("--occupations", help="all (default: every O*NET title) or a CSV with soc_code.")
    ] = None,
    soc: Annotated[
        str | None, typer.Option("--soc", help="Only titles whose SOC code starts so: 29 (a major group), 29-1,...")
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget", help="Most model calls in all (default: no limit); a larger one carries a scan on.", min=1
        ),
    ] = None,
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
    max_failed_share: MaxFailedShareOption = None,
    config_file: Annotated[
        Path | None,
        typer.Option("--config", help="RUN.toml with the backend's settings (api_mode, timeout, ...); flags override."),
    ] = None,
    scan_id: Annotated[str | None, typer.Option("--scan-id", help="Scan id; an existing one is resumed.")] = None,
    db: RunDbOption = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Report folder (default: <db folder>/<scan id>).")
    ] = None,
    no_cache: NoCacheOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bars.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print titles, rounds, model calls and an estimated time; write nothing.")
    ] = False,
) -> None:
    """Find the titles a model picks one gender for, in rounds: flagged with FDR <= 0.05 however they went."""
    scanning.check_scan_id(scan_id)
    given = dict(
        backend=backend,
        model=model,
        base_url=base_url,
        device=device,
        dtype=dtype,
        answers=answers,
        decoding=decoding,
        occupations=occupations,
        soc=soc,
        pairs=pairs,
        names=names,
        budget=budget,
        seed=seed,
        threads=threads,
        concurrency=concurrency,
        max_failed_share=max_failed_share,
        no_cache=no_cache or None,
        quiet=quiet or None,
        db=db,
    )
    flags = {name: value for name, value in given.items() if value is not None}  # None: the flag is not given
    config, settings = scanning.resolve_settings(flags, scan_id, config_file)
    if dry_run:
        for line in _plan_lines(config, settings):
            typer.echo(line)
        return
    if output is not None:  # before the model is asked, not after the budget is spent
        _check_output_folder(output)
    _print_outcome(_scan_telling_how_to_resume(config, settings, scan_id, config_file, output), settings)


def _scan_telling_how_to_resume(
    config: RunSpec, settings: scanning.ScanSettings, scan_id: str | None, config_file: Path | None, output: Path | None
) -> scanning.ScanOutcome:
    """Run the scan through the pipeline; print its id as soon as it exists, and on Ctrl-C how to resume it."""
    started: list[str] = []

    def announce(started_id: str) -> None:
        started.append(started_id)
        typer.echo(
            f"scan {terminal_text(started_id)} in {terminal_text(config.options.db)}; if it stops, resume it with: "
            f"{_resume_command(started_id, str(config.options.db), config_file)}",
            err=True,
        )

    def reopened(titles: int, depth: int) -> None:
        typer.echo(
            f"budget {_budget_text(settings.budget)}: the {titles} titles the budget stopped are asked again, "
            f"from name pair {depth + 1} on (the pairs asked since they stopped are skipped)",
            err=True,
        )

    try:
        return pipeline.scan(config, settings, scan_id, on_start=announce, on_reopen=reopened, report=output or True)
    except KeyboardInterrupt:
        if started:
            how = _resume_command(started[0], str(config.options.db), config_file)
            typer.echo(f"\ninterrupted; resume it with: {how}", err=True)
        raise typer.Exit(130) from None


def _print_outcome(outcome: scanning.ScanOutcome, settings: scanning.ScanSettings) -> None:
    typer.echo(f"{len(outcome.flagged)} titles flagged after {outcome.calls:,} model calls (FDR <= 0.05, e-BH):")
    for title in outcome.flagged:
        typer.echo(
            f"  {terminal_text(title.title)}: share {title.share:.2f} ({title.ci_low:.2f}-{title.ci_high:.2f}), "
            f"e-value {title.e_value:.3g}, {title.preferred}"
        )
    if outcome.budget_stopped:
        more = shlex.join(["probe", "scan", "--scan-id", outcome.scan_id, "--db", outcome.db, "--budget", "MORE"])
        typer.echo(
            f"{outcome.budget_stopped} titles stopped undecided at the budget of {_budget_text(settings.budget)}; "
            f"a larger one asks them further: {terminal_text(more)}"
        )
    typer.echo(f"report: {terminal_text(str(outcome.report['scan.md']))} (scan.json, scan_groups.svg beside it)")
    if outcome.confirm_command is not None:
        typer.echo(f"confirm with a full two-stage run: {terminal_text(shlex.join(outcome.confirm_command))}")
    typer.echo(outcome.scan_id)


def _check_output_folder(output: Path) -> None:
    """The report folder exists or can be made (a file there, or no permission, is said before the scan runs)."""
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"-o {output}: cannot be the report folder ({exc.strerror or exc})") from None


def _budget_text(budget: int | None) -> str:
    return "(none)" if budget is None else f"{budget:,} calls"


def _plan_lines(config: RunSpec, settings: scanning.ScanSettings) -> list[str]:
    """The dry run: titles, pairs, rounds, calls (round 1, at most, typical) and the time they take."""
    estimate = scanning.estimate(config, settings)
    rate = backend_info(config.backend.kind).documented_rates[1]
    lines = [
        f"titles: {estimate.titles:,}; name pairs: {estimate.pairs} (both orders); rounds up to depths "
        f"{', '.join(map(str, estimate.depths))} pairs a title",
        f"model calls: round 1 {estimate.first_round:,}; at most {estimate.most:,}"
        + (" (the budget)" if settings.budget is not None and estimate.most == settings.budget else " (every pair)"),
        f"typical: about {estimate.typical:,} ({scanning.TYPICAL_CALLS_PER_TITLE} a title on the simulated model "
        "of BENCHMARKS.md; a model that stereotypes more titles needs more)",
        f"estimated time with {config.backend.kind} at {rate:.3g} calls/s (BENCHMARKS.md): round 1 "
        f"{plan.duration(estimate.first_round / rate)}, typical {plan.duration(estimate.typical / rate)}, "
        f"at most {plan.duration(estimate.most / rate)}",
    ]
    return lines
