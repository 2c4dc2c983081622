"""The format registry (probe/integrations/formats.py) and its one entry from the pipeline
(probe/pipeline/exports.py): each name reaches its module's function, a name it does not hold is one line naming
the choices, and a design leaves through a format of probe items without a model. The files each format writes and
their round trips: test_export_hf_dataset.py, test_lm_eval_roundtrip.py, test_inspect_roundtrip.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe.common.errors import UserError
from probe.integrations import formats, hf_dataset, imports, inspect_task, lm_eval_task, source
from probe.pipeline import exports
from probe.report import export, ll144
from probe.store.config import RunConfig

DESIGN = {"occupations": ["nurse"], "pairs": 1, "top_k": 1, "conditions": ["taxonomy"]}


def test_each_format_name_reaches_its_modules_function() -> None:
    assert {name: chosen.function() for name, chosen in formats.EXPORTS.items()} == {
        "parquet": export.export_run,
        "csv": export.export_run,
        "ll144": ll144.write_ll144,
        "hf-dataset": hf_dataset.write_dataset,
        "lm-eval": lm_eval_task.write_task,
        "inspect": inspect_task.write_task,
    }
    assert {name: chosen.function() for name, chosen in formats.IMPORTS.items()} == {
        "lm-eval": imports.read_lm_eval_samples,
        "inspect": inspect_task.read_inspect_log,
    }
    # the design formats are the ones that write probe items; `probe export --help` lists what each writes
    assert [name for name, chosen in formats.EXPORTS.items() if chosen.design] == ["hf-dataset", "lm-eval", "inspect"]
    assert exports.EXPORT_FORMATS["ll144"] == formats.EXPORTS["ll144"].help


def test_a_name_no_format_holds_is_one_line_naming_the_choices(db_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(
        UserError,
        match=r"^--format 'xlsx': choose from parquet, csv, ll144, hf-dataset, lm-eval, "
        r"inspect$",
    ):
        exports.export(db_file, "any", "xlsx", out)
    with pytest.raises(UserError, match=r"^'helm': choose a tool from lm-eval, inspect$"):
        formats.read_answers("helm", [])
    with pytest.raises(UserError, match=r"^--format csv: give the RUN_ID to export$"):
        exports.export(db_file, None, "csv", out)
    with pytest.raises(UserError, match=r"^--prompt-format 'qa': choose from chat, completion$"):
        exports.export(db_file, None, "lm-eval", out, design=DESIGN, prompt_format="qa")
    assert not out.exists()


def test_a_design_leaves_as_probe_items_without_a_model(db_file: Path, tmp_path: Path) -> None:
    written = exports.export(db_file, None, "lm-eval", tmp_path / "task", design=DESIGN)
    assert sorted(path.relative_to(tmp_path / "task").as_posix() for path in written) == [
        "README.md",
        "dataset/README.md",
        "dataset/data/stage1.parquet",
        "taxonomy_probe_attr.yaml",
        "utils.py",
    ]
    # stage 2 asks about stage 1's answers: a design without a model has stage 1's items only
    exported = source.from_design(RunConfig(**DESIGN, db=str(db_file)), "completion")
    assert (exported.run_id, exported.model, exported.answers, exported.prompt_format) == (
        None,
        None,
        None,
        "completion",
    )
    assert {item.stage for item in exported.items} == {1} and len(exported.items) > 0
