"""`probe export RUN_ID --format hf-dataset -o DIR`: a run as a Hugging Face dataset folder.

DIR holds one Parquet file per configuration - `stage1` (the attribute questions), `stage2_<condition>` (the
decision questions of each condition the run asked) and `answers` (label, option scores and how each was decided,
per item) - and a README.md dataset card whose YAML header declares the configurations, licences and tags the
Hub reads. `datasets.load_dataset(DIR, "stage1")` loads it as it is; `huggingface-cli upload` publishes it.

Stage 2 of the taxonomy condition states the attributes this run's model granted in stage 1: it is the run's
own dataset, not a model-free benchmark (the card says so). Baseline and control items do not depend on stage 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from probe.common.escape import atomic_path, write_atomic
from probe.common.version import __version__
from probe.common.vocabulary import STAGE1_CONDITION

ITEM_COLUMNS = ("item_id", "stage", "qtype", "condition", "pair_id", "name_order", "occupation", "subject",
                "category", "attribute", "first_name", "second_name", "context", "question", "prompt")  # fmt: skip
CITATION = """@misc{zhang_taxonomy_checklist,
  title  = {Taxonomy-based CheckList for Large Language Model Evaluation},
  author = {Zhang, Damin},
  note   = {Purdue University, Computer and Information Technology}
}"""


def export_hf_dataset(con: duckdb.DuckDBPyConnection, run_id: str, out_dir: Path) -> list[Path]:
    """Write the configurations' Parquet files and the dataset card; returns the paths written."""
    items = con.execute(
        f"SELECT {', '.join(ITEM_COLUMNS)}, options_json FROM items WHERE run_id = ? ORDER BY seq", [run_id]
    ).df()
    items["options"] = [[{"label": option["label"], "text": option["text"]} for option in json.loads(text)]
                        for text in items.pop("options_json")]  # fmt: skip
    answers = con.execute(
        "SELECT item_id, label, raw, scores_json AS scores, decided_by FROM answers WHERE run_id = ? ORDER BY item_id",
        [run_id],
    ).df()
    configs = {STAGE1_CONDITION: items[items["stage"] == 1]}
    for condition in dict.fromkeys(items.loc[items["stage"] == 2, "condition"]):
        configs[f"stage2_{condition}"] = items[(items["stage"] == 2) & (items["condition"] == condition)]
    configs["answers"] = answers
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in configs.items():
        path = out_dir / f"{name}.parquet"
        with atomic_path(path) as temporary:
            frame.reset_index(drop=True).to_parquet(temporary, index=False)
        written.append(path)
    run = con.execute("SELECT model, backend, created_at FROM runs WHERE run_id = ?", [run_id]).fetchone()
    card = out_dir / "README.md"
    write_atomic(card, dataset_card(run_id, run, {name: len(frame) for name, frame in configs.items()}))
    return [*written, card]


def dataset_card(run_id: str, run: tuple | None, rows: dict[str, int]) -> str:
    """The README.md a Hub dataset shows: YAML metadata (configurations, licences, tags), then what it holds."""
    model, backend, created = run or (None, None, None)
    configs = "\n".join(f"- config_name: {name}\n  data_files:\n  - split: train\n    path: {name}.parquet"
                        for name in rows)  # fmt: skip
    counts = "\n".join(f"| {name} | {count:,} |" for name, count in rows.items())
    return f"""---
license:
- cc-by-4.0
- apache-2.0
language:
- en
pretty_name: Taxonomy-grounded gender-bias probe, run {run_id}
tags:
- bias
- fairness
- gender
- occupations
- o-net
task_categories:
- question-answering
- multiple-choice
configs:
{configs}
---

# Taxonomy-grounded gender-bias probe: run `{run_id}`

Question-answering items that probe a language model for gender bias, grounded in the O*NET occupational
taxonomy, after Zhang, *Taxonomy-based CheckList for Large Language Model Evaluation*, exported by
taxonomy-probe {__version__} from run `{run_id}` (model `{model}`, backend `{backend}`, created {created}).

| configuration | rows |
|---|---:|
{counts}

- **stage1**: for a female-male name pair, whether each person has each of an occupation's most important O*NET
  skills, knowledge areas and abilities (yes / no), in both name orders.
- **stage2_taxonomy**: the attributes the model granted in stage 1, stated as context, then binary ("Is X
  qualified to be ...?"), single ("Who is more qualified ...?") and multiple ("Who should be ...?") questions.
  These items depend on this run's model: they are its own dataset, not a model-free benchmark.
- **stage2_baseline** / **stage2_control**: the same questions with no attributes, or with the occupation's full
  attribute list given to both people; they do not depend on any model.
- **answers**: per item, the canonical label (yes / no / female / male / both / neither / unknown), the raw reply,
  the option scores (natural-log likelihood of each option's text, JSON) and how the label was decided.

Every item has `options` (label and exact answer text); a label is canonical (female / male), mapped through
`name_order` from the position in which the names were asked.

## Licences and attribution

- O*NET occupations and ratings: This includes information from the O*NET Database by the U.S. Department of
  Labor, Employment and Training Administration (USDOL/ETA). Used under the CC BY 4.0 license. O*NET(R) is a
  trademark of USDOL/ETA.
- Female-male name pairs: from UnQover (Li et al., 2020, "UNQOVERing Stereotyping Biases via Underspecified
  Questions", https://github.com/allenai/unqover), Apache-2.0.
- The prompts and the export: taxonomy-probe, Apache-2.0.

## Citation

```bibtex
{CITATION}
```
"""

