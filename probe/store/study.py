"""Studies: one design for several models, one run per model under a study id, resumable as a whole.

A variant is a model with its backend and settings (a system prompt makes "model + mitigation prompt" a
variant of its own). `probe run --model A --model B ...` makes one variant per model (same backend and
settings); RUN.toml's [study] table lists them, each [[study.models]] entry overriding the shared settings:

    pairs = 6
    [study]
    id = "smollm2"                     # optional: else a new id, printed at start
    [[study.models]]
    name = "hf"                        # optional: the run id is <study id>-<name>
    backend = "hf-causal"
    [[study.models]]
    backend = "llamacpp"
    [[study.models]]
    name = "hf-fair"
    system_prompt = "fair.txt"

Every variant gets the same design (pairs, occupations, conditions, top-k: the shared settings). Run ids
are fixed by the study id and the variant, so the same command with `--study ID` resumes every run where
it stopped (a finished run is only re-analysed), and `probe run --study ID` alone resumes the study's
stored runs with their stored settings (probe.pipeline.study_configs). Each run records its study (config_json
`study`): `probe runs` groups them, `probe compare --study ID` compares them.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from probe.common.errors import UserError
from probe.store.config import RUN_ID, read_study
from probe.store.spec import RunSpec

_NOT_IN_RUN_ID = re.compile(r"[^A-Za-z0-9._-]+")


def new_study_id() -> str:
    """Sortable by start time: study-20261124-093012-a1b2."""
    return f"study-{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def variant_name(backend: str, settings: Mapping[str, object]) -> str:
    """A variant's default name: its backend, and its model's file or hub name where it names one."""
    model = settings.get("model")
    name = backend if not model else f"{backend}-{Path(str(model)).name.removesuffix('.gguf')}"
    return _NOT_IN_RUN_ID.sub("-", name).strip("-._") or "model"


def study_configs(config: RunSpec, models: Sequence[str], config_file: Path | None) -> list[RunSpec] | None:
    """The runs of a study (one RunSpec per variant), or None when the command names no variants (one run, or
    `--study ID` alone: probe.pipeline.study_configs resumes the stored ones)."""
    toml_id, toml_variants = read_study(config_file) if config_file else (None, [])
    if len(models) > 1 and toml_variants:
        raise UserError("--model: give a study's models either with --model or in RUN.toml's [study], not both")
    variants = [(None, {"model": model}) for model in models] if len(models) > 1 else toml_variants
    if not variants:
        return None
    if config.options.run_id is not None:
        raise UserError("--run-id: a study names its runs <study id>-<model>; give --study ID instead")
    study = config.options.study or toml_id or new_study_id()
    configs, taken = [], set()
    for name, settings in variants:
        merged = config.replaced(**settings)
        base = name or variant_name(merged.backend.kind, settings)
        unique = base if base not in taken else next(f"{base}-{n}" for n in range(2, 999) if f"{base}-{n}" not in taken)
        taken.add(unique)
        run_id = f"{study}-{unique}"
        if not RUN_ID.fullmatch(run_id):
            raise UserError(
                f"study {study}: the run id {run_id!r} is not valid (at most 64 characters); give shorter names"
            )
        configs.append(merged.replaced(run_id=run_id, study=study))
    return configs
