"""The options of the run settings (probe/store/spec.py SETTINGS), declared once: `probe run`, `probe dataset
preview`, `probe export` and `probe scan` take them from here. The flag is the setting's key with dashes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from probe.pipeline.front import PRESETS, backend_help

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
    typer.Option(
        "--questions",
        help="Stage 2 asks: pairs (two-person questions, the default), kway (name sets: who "
        "of a set's K people is the most qualified), or pairs,kway.",
    ),
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
AnswersOption = Annotated[str | None, typer.Option("--answers", help="replay: CSV or Parquet file of labels.")]
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
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Ask the model even when cached.")]
RunIdOption = Annotated[str | None, typer.Option("--run-id", help="Run id; an existing one is resumed.")]
RunDbOption = Annotated[str | None, typer.Option("--db", help="DuckDB database file (default runs/probe.duckdb).")]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="RUN.toml with the same settings (flags override it).")
]
