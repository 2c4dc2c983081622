"""`probe run` and `probe dataset preview` (DESIGN section 8); `probe export` is in export_cmd.py."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from probe import pipeline
from probe.cli.analyze_cmd import print_headline
from probe.cli.app import app
from probe.cli.options import (
    AnswersOption,
    BackendOption,
    BaseUrlOption,
    ConcurrencyOption,
    ConditionsOption,
    ConfigOption,
    DecodingOption,
    DeviceOption,
    DtypeOption,
    MaxFailedShareOption,
    NamesOption,
    NoCacheOption,
    OccupationsOption,
    PairsOption,
    PresetOption,
    QuestionsOption,
    RunDbOption,
    RunIdOption,
    SystemPromptOption,
    ThreadsOption,
    TopKOption,
    WordingsOption,
)
from probe.cli.report_cmd import report_run
from probe.common.errors import UserError
from probe.common.escape import terminal_text
from probe.pipeline.front import PROMPT_FORMATS, RunSpec, backend_info, plan, preview, write_failure
from probe.pipeline.outcome import RunOutcome

dataset_app = typer.Typer(help="Inspect the two-stage dataset without a model.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")


def _config(config_file: Path | None, **flags: object) -> RunSpec:
    """Flags not given are None, so a stored run, RUN.toml and the preset fill them; --no-cache/--quiet only
    switch on."""
    return pipeline.settings({name: (None if value is False else value) for name, value in flags.items()}, config_file)


@app.command("run")
def run_command(
    preset: PresetOption = None,
    pairs: PairsOption = None,
    names: NamesOption = None,
    occupations: OccupationsOption = None,
    top_k: TopKOption = None,
    conditions: ConditionsOption = None,
    wordings: WordingsOption = None,
    questions: QuestionsOption = None,
    backend: BackendOption = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", help="Model id or path (default: the bundled SmolLM2 GGUF); repeat it for a study."),
    ] = None,
    base_url: BaseUrlOption = None,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
    answers: AnswersOption = None,
    decoding: DecodingOption = None,
    threads: ThreadsOption = None,
    concurrency: ConcurrencyOption = None,
    system_prompt: SystemPromptOption = None,
    study: Annotated[
        str | None, typer.Option("--study", help="Study id: one run per model (resumes the study's runs).")
    ] = None,
    run_id: RunIdOption = None,
    db: RunDbOption = None,
    config: ConfigOption = None,
    no_cache: NoCacheOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bars; print only the run id.")] = False,
    report: Annotated[
        bool, typer.Option("--report", help="Also write the audit report (runs/<run id>/report.html).")
    ] = False,
    max_failed_share: MaxFailedShareOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print items, model calls and an estimated time; write nothing.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Start a run estimated over 30 minutes without asking.")] = False,
) -> None:
    """Build the two-stage dataset, answer it with a backend, and store the answers. Prints the run id (a study:
    one per model)."""
    models = model or []
    settings = _config(
        config,
        preset=preset,
        pairs=pairs,
        names=names,
        occupations=occupations,
        top_k=top_k,
        conditions=conditions,
        backend=backend,
        model=models[0] if len(models) == 1 else None,
        base_url=base_url,
        device=device,
        dtype=dtype,
        answers=answers,
        decoding=decoding,
        threads=threads,
        concurrency=concurrency,
        run_id=run_id,
        db=db,
        no_cache=no_cache,
        quiet=quiet,
        max_failed_share=max_failed_share,
        system_prompt=system_prompt,
        study=study,
        wordings=wordings,
        questions=questions,
    )
    study_runs = pipeline.study_configs(settings, models, config)
    if study_runs is not None:
        _run_study(study_runs, dry_run=dry_run, yes=yes, report=report)
        return
    if dry_run:
        for line in plan.describe(plan.plan(settings), settings):
            typer.echo(terminal_text(line))
        return
    for line in plan.names_found(settings):  # before any model call; warnings even with --quiet
        if not settings.options.quiet or line.startswith("warning: "):
            typer.echo(terminal_text(line), err=True)
    if not yes:
        _confirm_long_run(settings)
    outcome = _run_telling_how_to_resume(settings)
    typer.echo(outcome.run_id)
    _warn_about_failed_items(outcome)
    if not settings.options.quiet:
        print_headline(outcome)
    if report:
        report_run(Path(settings.options.db), outcome.run_id)


def _run_study(configs: list[RunSpec], *, dry_run: bool, yes: bool, report: bool) -> None:
    """Every run of a study in turn (each resumed where it stopped); prints each run id as it finishes."""
    study, db = configs[0].options.study, configs[0].options.db
    if dry_run:
        for settings in configs:
            model = settings.backend.model or "(default model)"
            typer.echo(f"--- {settings.options.run_id}: {settings.backend.kind} {model}")
            for line in plan.describe(plan.plan(settings), settings):
                typer.echo(line)
        return
    if not yes:
        for settings in configs:
            _confirm_long_run(settings)
    if not configs[0].options.quiet:
        typer.echo(
            f"study {study}: {len(configs)} runs in {db}; if it stops, run the same command with "
            f"--study {study} (or `probe run --study {study} --db {db}`) to resume it",
            err=True,
        )
    for settings in configs:
        outcome = _run_telling_how_to_resume(settings)
        typer.echo(outcome.run_id)
        _warn_about_failed_items(outcome)
        if report:
            report_run(Path(settings.options.db), outcome.run_id)
    if not configs[0].options.quiet:
        typer.echo(f"compare the study's runs with: probe compare --study {study} --db {db}", err=True)


def _confirm_long_run(settings: RunSpec) -> None:
    """A run estimated over 30 minutes starts only when confirmed: asked on a terminal, else refused."""
    estimate = plan.plan(settings)
    if estimate.seconds <= plan.CONFIRM_OVER_S:
        return
    took = plan.duration(estimate.seconds)
    what = f"{estimate.calls_left:,} model calls, estimated at {took} with {settings.backend.kind}"
    if not sys.stdin.isatty():
        raise UserError(f"this run needs {what}; pass --yes to start it (or --dry-run to see the plan)")
    typer.confirm(f"This run needs {what}. Start it?", abort=True, err=True)


def resume_command(run_id: str, db: str) -> str:
    """The exact command that resumes a run, quoted for a POSIX shell."""
    return terminal_text(shlex.join(["probe", "run", "--run-id", run_id, "--db", db]))


def _run_telling_how_to_resume(settings: RunSpec) -> RunOutcome:
    """Run the pipeline; print the run id as soon as it exists, and on Ctrl-C or a failure how to resume.

    Messages go to stderr: stdout carries only the finished run id, for scripts (with --quiet, only the
    resume hint after a failure is printed).
    """
    started: list[str] = []

    def announce(run_id: str) -> None:
        started.append(run_id)
        if settings.options.quiet:  # --quiet: the finished run id is the only output
            return
        db, how = settings.options.db, resume_command(run_id, settings.options.db)
        typer.echo(f"run {run_id} in {terminal_text(db)}; if it stops, resume it with: {how}", err=True)

    try:
        return pipeline.run(settings, on_start=announce)
    except KeyboardInterrupt:
        if started:
            typer.echo(f"\ninterrupted; resume it with: {resume_command(started[0], settings.options.db)}", err=True)
        raise typer.Exit(130) from None
    except UserError:
        raise  # the user's to fix, then run the same command again: one line, as for any bad input
    except BaseException as error:
        if started and write_failure(error) is None:  # a full disk's one line says how to resume itself
            how = resume_command(started[0], settings.options.db)
            typer.echo(f"run {started[0]} stopped; resume it with: {how}", err=True)
        raise


def _warn_about_failed_items(outcome: RunOutcome) -> None:
    """Items the backend could not answer (after its retries) are stored as unknown with their error: say how many.

    Printed to stderr, with --quiet too: the run id on stdout stays the only thing scripts read.
    """
    if outcome.failed_items:
        typer.echo(
            f"warning: {outcome.failed_items} of {outcome.items} items could not be answered; they are stored as "
            f"unknown with their error (answers.error); `probe run --run-id {outcome.run_id}` with the same settings "
            "asks them again",
            err=True,
        )


@dataset_app.command("preview")
def preview_command(
    preset: PresetOption = None,
    pairs: PairsOption = None,
    names: NamesOption = None,
    occupations: OccupationsOption = None,
    top_k: TopKOption = None,
    conditions: ConditionsOption = None,
    backend: BackendOption = None,
    db: RunDbOption = None,
    config: ConfigOption = None,
    prompt_format: Annotated[
        str | None,
        typer.Option("--prompt-format", help=f"{', '.join(PROMPT_FORMATS)} (default: qa for hf-qa, else chat)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Prompts shown per kind.", min=1)] = 2,
) -> None:
    """Print sample prompts of every kind (stage, qtype, condition) without a model."""
    settings = _config(
        config,
        preset=preset,
        pairs=pairs,
        names=names,
        occupations=occupations,
        top_k=top_k,
        conditions=conditions,
        backend=backend,
        db=db,
    )
    chosen_format = prompt_format or backend_info(settings.backend.kind).preview_format
    sample = preview.sample(settings.design, chosen_format, limit, settings.options.db)
    typer.echo(
        f"{sample.total_items} items ({chosen_format} format). Stage 2 is shown as if stage 1 had granted every "
        "attribute, so taxonomy prompts here equal control prompts; a real run states only the granted ones."
    )
    for item in sample.shown:
        options = " | ".join(f"{option.text} -> {option.label}" for option in item.options)
        where = f"occupation={item.occupation} " if item.occupation else ""
        typer.echo(
            f"\n--- stage {item.stage} {item.qtype} [{item.condition}] pair={item.pair_id} "
            f"order={item.name_order} {where}subject={item.subject}\n{item.prompt}\n(options: {options})"
        )
