"""One model, two engines: the bundled SmolLM2 GGUF under llama.cpp and under hf-causal (transformers).

Both engines answer the same slice of the paper preset with the real `probe run` CLI (bench.llm's timed
child process), each into its own database. Per engine: items/s and the paper-preset estimate scaled
from the slice (bench.llm.paper_minutes_estimate). Agreement is over the items both runs hold with the
same prompt and asked subject (stage 2 is built from each engine's own stage-1 answers, so a stage-2
item exists in both only where the granted attributes agree): `engine_agreement` is the share of equal
labels, `engine_agreement_clear` the share among items where llama.cpp's top two option scores are at
least CLEAR_MARGIN nats apart.

`--gpu` times hf-causal on a CUDA GPU (`--device cuda`, bfloat16) instead of comparing engines, and says
so when there is none.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from bench.llm import QUICK_OCCUPATIONS, paper_minutes_estimate, timed_probe_run

CLEAR_MARGIN = 0.5  # nats between llama.cpp's best and second-best option
SLICE_ARGS = ["--preset", "paper", "--pairs", "1", "--occupations", ",".join(QUICK_OCCUPATIONS)]


def _answers(database: Path) -> dict[tuple[str, str | None], tuple[str, str | None]]:
    """(prompt, asked subject) -> (label, scores_json) for every answered item of the one run."""
    con = duckdb.connect(str(database), read_only=True)
    try:
        rows = con.execute(
            "SELECT i.prompt, i.subject, a.label, a.scores_json FROM items i JOIN answers a USING (run_id, item_id)"
        ).fetchall()
    finally:
        con.close()
    return {(prompt, subject): (label, scores) for prompt, subject, label, scores in rows}


def margin(scores_json: str | None) -> float | None:
    """Best minus second-best option score, or None without scores."""
    if not scores_json:
        return None
    top = sorted(json.loads(scores_json).values(), reverse=True)
    return top[0] - top[1] if len(top) > 1 else None


def agreement(reference: Path, other: Path) -> dict[str, float]:
    """Label agreement of `other` with `reference` (llama.cpp) over the items both answered."""
    ours, theirs = _answers(reference), _answers(other)
    shared = [key for key in ours if key in theirs]
    same = [ours[key][0] == theirs[key][0] for key in shared]
    clear = [
        ours[key][0] == theirs[key][0]
        for key in shared
        if (gap := margin(ours[key][1])) is not None and gap >= CLEAR_MARGIN
    ]
    return {
        "engine_items_compared": len(shared),
        "engine_agreement": round(sum(same) / len(same), 4) if same else float("nan"),
        "engine_clear_items": len(clear),
        "engine_agreement_clear": round(sum(clear) / len(clear), 4) if clear else float("nan"),
    }


def _engine_figures(name: str, args: list[str], folder: Path, paper_stage_items: dict[str, int]) -> dict:
    folder.mkdir()
    run = timed_probe_run([*SLICE_ARGS, *args], folder)
    return {
        f"{name}_slice_items": run.items,
        f"{name}_items_per_s": round(run.items / run.wall_s, 3),
        f"{name}_answer_items_per_s": round(run.items / run.report["answer_s"], 3),
        f"{name}_startup_s": round(run.report["backend_start_s"], 2),
        f"paper_preset_minutes_est_{name}": round(paper_minutes_estimate(run, paper_stage_items), 1),
    }


def measure(folder: Path, paper_stage_items: dict[str, int], gpu: bool) -> dict[str, float | str]:
    if gpu:
        import torch

        if not torch.cuda.is_available():
            return {"gpu": "none: no CUDA GPU on this machine, nothing measured"}
        return {
            "gpu": torch.cuda.get_device_name(0),
            **_engine_figures("hf_causal_gpu", ["--backend", "hf-causal", "--device", "cuda"], folder / "gpu",
                              paper_stage_items),
        }  # fmt: skip
    figures = {
        **_engine_figures("llamacpp", ["--backend", "llamacpp"], folder / "llamacpp", paper_stage_items),
        **_engine_figures("hf_causal", ["--backend", "hf-causal"], folder / "hf_causal", paper_stage_items),
    }
    return {**figures, **agreement(folder / "llamacpp" / "run.duckdb", folder / "hf_causal" / "run.duckdb")}
