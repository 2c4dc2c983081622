"""`probe run` and `probe dataset preview` (DESIGN section 8); `probe export` is in export_cmd.py."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from probe import pipeline
from probe.answering import plan
from probe.backends import backend_help, backend_info
from probe.cli.analyze_cmd import print_headline
from probe.cli.app import app
from probe.cli.report_cmd import report_run
from probe.common.errors import UserError
from probe.common.escape import terminal_text
from probe.dataset import preview
from probe.dataset.prompts import PROMPT_FORMATS
from probe.pipeline.outcome import RunOutcome
from probe.store.config import PRESETS, RunConfig
from probe.store.db import write_failure

dataset_app = typer.Typer(help="Inspect the two-stage dataset without a model.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")

PresetOption = Annotated[str | None, typer.Option("--preset", help=f"Settings preset: {', '.join(PRESETS)}.")]
PairsOption = Annotated[
    str | None,
    typer.Option("--pairs", help="First N name pairs (N), or these pair ids (1,4,9). Default: all 70."),
]
OccupationsOption = Annotated[
    str | None,
    typer.Option("--occupations", help="Occupation names (a,b) or a CSV file. Default: the paper's 62."),
]
NamesOption = Annotated[
    str | None, typer.Option("--names", help="CSV of name pairs (columns female, male) instead of the shipped 70.")
]
TopKOption = Annotated[int | None, typer.Option("--top-k", help="Top attributes per category (default 5).")]
ConditionsOption = Annotated[
    str | None,
    typer.Option("--conditions", help="Stage-2 conditions: taxonomy,baseline,control (default all)."),
]
WordingsOption = Annotated[
    str | None,
    typer.Option("--wordings", help="Paraphrases asked: all, the first N, or ids (default: the paper's alone)."),
]
QuestionsOption = Annotated[
    str | None,
    typer.Option("--questions", help="Stage 2 asks: pairs (two-person questions, the default), kway (name sets: who "
                 "of a set's K people is the most qualified), or pairs,kway."),
]
BackendOption = Annotated[str | None, typer.Option("--backend", help=backend_help())]
ModelOption = Annotated[
    str | None, typer.Option("--model", help="Model id or path (default: the bundled SmolLM2 GGUF).")
]
BaseUrlOption = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible server URL, or URL1,URL2,... (one run, many).")
]
DeviceOption = Annotated[
    str | None, typer.Option("--device", help="hf backends: cpu, cuda or mps (default: a GPU when there is one).")
]
DtypeOption = Annotated[
    str | None,
    typer.Option("--dtype", help="hf backends: float32, bfloat16 or float16 (default: bfloat16 on a GPU)."),
]
AnswersOption = Annotated[
    str | None, typer.Option("--answers", help="replay: CSV or Parquet file of labels.")
]
DecodingOption = Annotated[
    str | None,
    typer.Option("--decoding", help="Local models: score (option log-likelihoods, default) or generate."),
]
ThreadsOption = Annotated[
    int | None, typer.Option("--threads", help="CPU threads of a local model (default: the idle cores).")
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option("--concurrency", help="Parallel requests / llama.cpp servers (default: sized to the machine)."),
]
MaxFailedShareOption = Annotated[
    str | None,
    typer.Option("--max-failed-share", help="Fail if more answers than this share fail (default 0.1)."),
]
SystemPromptOption = Annotated[
    str | None,
    typer.Option("--system-prompt", help="A system prompt (TEXT, or a .txt/.md FILE) before every question."),
]
RunIdOption = Annotated[str | None, typer.Option("--run-id", help="Run id; an existing one is resumed.")]
RunDbOption = Annotated[
    str | None, typer.Option("--db", help="DuckDB database file (default runs/probe.duckdb).")
]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="RUN.toml with the same settings (flags override it).")
]


def _config(config_file: Path | None, **flags: object) -> RunConfig:
    """Flags not given are None, so a stored run, RUN.toml and the preset fill them; --no-cache/--quiet only
    switch on."""
    return pipeline.settings(
        {name: (None if value is False else value) for name, value in flags.items()}, config_file
    )


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
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ask the model even when cached.")] = False,
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
        preset=preset, pairs=pairs, names=names, occupations=occupations, top_k=top_k, conditions=conditions,
        backend=backend, model=models[0] if len(models) == 1 else None, base_url=base_url, device=device,
        dtype=dtype, answers=answers, decoding=decoding, threads=threads, concurrency=concurrency, run_id=run_id,
        db=db, no_cache=no_cache, quiet=quiet, max_failed_share=max_failed_share, system_prompt=system_prompt,
        study=study, wordings=wordings, questions=questions,
    )  # fmt: skip
    study_runs = pipeline.study_configs(settings, models, config)
    if study_runs is not None:
        _run_study(study_runs, dry_run=dry_run, yes=yes, report=report)
        return
    if dry_run:
        for line in plan.describe(plan.plan(settings), settings):
            typer.echo(terminal_text(line))
        return
    for line in plan.names_found(settings):  # before any model call; warnings even with --quiet
        if not settings.quiet or line.startswith("warning: "):
            typer.echo(terminal_text(line), err=True)
    if not yes:
        _confirm_long_run(settings)
    outcome = _run_telling_how_to_resume(settings)
    typer.echo(outcome.run_id)
    _warn_about_failed_items(outcome)
    if not settings.quiet:
        print_headline(outcome)
    if report:
        report_run(Path(settings.db), outcome.run_id)


def _run_study(configs: list[RunConfig], *, dry_run: bool, yes: bool, report: bool) -> None:
    """Every run of a study in turn (each resumed where it stopped); prints each run id as it finishes."""
    study, db = configs[0].study, configs[0].db
    if dry_run:
        for settings in configs:
            typer.echo(f"--- {settings.run_id}: {settings.backend} {settings.model or '(default model)'}")
            for line in plan.describe(plan.plan(settings), settings):
                typer.echo(line)
        return
    if not yes:
        for settings in configs:
            _confirm_long_run(settings)
    if not configs[0].quiet:
        typer.echo(f"study {study}: {len(configs)} runs in {db}; if it stops, run the same command with "
                   f"--study {study} (or `probe run --study {study} --db {db}`) to resume it", err=True)  # fmt: skip
    for settings in configs:
        outcome = _run_telling_how_to_resume(settings)
        typer.echo(outcome.run_id)
        _warn_about_failed_items(outcome)
        if report:
            report_run(Path(settings.db), outcome.run_id)
    if not configs[0].quiet:
        typer.echo(f"compare the study's runs with: probe compare --study {study} --db {db}", err=True)


def _confirm_long_run(settings: RunConfig) -> None:
    """A run estimated over 30 minutes starts only when confirmed: asked on a terminal, else refused."""
    estimate = plan.plan(settings)
    if estimate.seconds <= plan.CONFIRM_OVER_S:
        return
    took = plan.duration(estimate.seconds)
    what = f"{estimate.calls_left:,} model calls, estimated at {took} with {settings.backend}"
    if not sys.stdin.isatty():
        raise UserError(f"this run needs {what}; pass --yes to start it (or --dry-run to see the plan)")
    typer.confirm(f"This run needs {what}. Start it?", abort=True, err=True)


def resume_command(run_id: str, db: str) -> str:
    """The exact command that resumes a run, quoted for a POSIX shell."""
    return terminal_text(shlex.join(["probe", "run", "--run-id", run_id, "--db", db]))


def _run_telling_how_to_resume(settings: RunConfig) -> RunOutcome:
    """Run the pipeline; print the run id as soon as it exists, and on Ctrl-C or a failure how to resume.

    Messages go to stderr: stdout carries only the finished run id, for scripts (with --quiet, only the
    resume hint after a failure is printed).
    """
    started: list[str] = []

    def announce(run_id: str) -> None:
        started.append(run_id)
        if settings.quiet:  # --quiet: the finished run id is the only output
            return
        how = resume_command(run_id, settings.db)
        typer.echo(f"run {run_id} in {terminal_text(settings.db)}; if it stops, resume it with: {how}", err=True)

    try:
        return pipeline.run(settings, on_start=announce)
    except KeyboardInterrupt:
        if started:
            typer.echo(f"\ninterrupted; resume it with: {resume_command(started[0], settings.db)}", err=True)
        raise typer.Exit(130) from None
    except UserError:
        raise  # the user's to fix, then run the same command again: one line, as for any bad input
    except BaseException as error:
        if started and write_failure(error) is None:  # a full disk's one line says how to resume itself
            how = resume_command(started[0], settings.db)
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
        typer.Option(
            "--prompt-format", help=f"{', '.join(PROMPT_FORMATS)} (default: qa for hf-qa, else chat)."
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Prompts shown per kind.", min=1)] = 2,
) -> None:
    """Print sample prompts of every kind (stage, qtype, condition) without a model."""
    settings = _config(
        config,
        preset=preset, pairs=pairs, names=names, occupations=occupations, top_k=top_k, conditions=conditions,
        backend=backend, db=db,
    )  # fmt: skip
    chosen_format = prompt_format or backend_info(settings.backend).preview_format
    sample = preview.sample(settings, chosen_format, limit)
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
