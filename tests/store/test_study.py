"""Studies: one design, one run per model under a study id; resumable as a whole; grouped by `probe runs`;
compared by `probe compare --study`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe import pipeline
from probe.cli import app
from probe.common.vocabulary import PAPER_WORDING, WORDINGS
from probe.store import db
from tests.report.test_report import OCCUPATIONS, first_named_choice, replay_answers, steady_choice
from tests.support import ROOT, assert_one_line_error, query
from tests.tiny_models import build_causal_model

DESIGN = ["--pairs", "4", "--occupations", ",".join(OCCUPATIONS), "--top-k", "2", "--quiet"]


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def study_toml(db_file: Path, tmp_path: Path) -> Path:
    """A RUN.toml whose [study] replays two scripted models (steady, first) on one design."""
    con = db.connect(db_file)
    try:
        for name, choose in (("steady", steady_choice), ("first", first_named_choice)):
            replay_answers(con, choose).to_csv(tmp_path / f"{name}.csv", index=False)
    finally:
        con.close()
    toml = tmp_path / "RUN.toml"
    toml.write_text(
        f'backend = "replay"\n[study]\nid = "scripted"\n'
        f'[[study.models]]\nname = "steady"\nanswers = "{tmp_path / "steady.csv"}"\n'
        f'[[study.models]]\nname = "first"\nanswers = "{tmp_path / "first.csv"}"\n'
    )
    return toml


def test_models_given_twice_make_one_run_each_on_one_design(db_file: Path, tmp_path: Path) -> None:
    chat, plain = (build_causal_model(tmp_path / kind, chat=kind == "chat") for kind in ("chat", "plain"))
    args = [
        "run",
        "--backend",
        "hf-causal",
        "--model",
        str(chat),
        "--model",
        str(plain),
        "--study",
        "tiny",
        "--pairs",
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "taxonomy",
        "--quiet",
        "--db",
        str(db_file),
    ]
    assert cli(*args).split() == ["tiny-hf-causal-chat", "tiny-hf-causal-plain"]
    assert cli(*args).split() == ["tiny-hf-causal-chat", "tiny-hf-causal-plain"]  # resumed: nothing asked again
    runs = query(db_file, "SELECT run_id, model, status, config_json FROM runs ORDER BY run_id")
    assert list(runs.model) == [str(chat), str(plain)]
    assert [json.loads(config)["study"] for config in runs.config_json] == ["tiny", "tiny"]
    assert set(runs.status) == {"complete"}
    keys = query(
        db_file,
        "SELECT run_id, count(*) AS items, count(DISTINCT (stage, qtype, condition, pair_id, "
        "name_order, occupation, subject, category, attribute)) AS keys FROM items "
        "GROUP BY run_id",
    )
    assert keys["keys"].nunique() == 1  # the same questions of both models
    fresh = query(db_file, "SELECT count(*) AS n FROM answers WHERE NOT cached").n[0]
    assert fresh == keys["items"].sum()  # the second command answered nothing


def test_a_study_from_run_toml_resumes_as_a_whole_and_compares(db_file: Path, study_toml: Path, tmp_path: Path) -> None:
    assert cli("run", "--config", str(study_toml), "--db", str(db_file), *DESIGN).split() == [
        "scripted-steady",
        "scripted-first",
    ]
    complete = query(db_file, "SELECT run_id, count(*) AS n FROM answers GROUP BY run_id ORDER BY run_id")
    con = db.connect(db_file)  # the second run stopped during stage 2: its stage-2 answers are gone
    con.execute(
        "DELETE FROM answers WHERE run_id = 'scripted-first' AND item_id IN "
        "(SELECT item_id FROM items WHERE run_id = 'scripted-first' AND stage = 2)"
    )
    con.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = 'scripted-first'")
    con.close()
    assert cli("run", "--study", "scripted", "--db", str(db_file), "--quiet").split() == [
        "scripted-steady",
        "scripted-first",
    ]
    resumed = query(db_file, "SELECT run_id, count(*) AS n FROM answers GROUP BY run_id ORDER BY run_id")
    assert resumed.equals(complete)
    listed = cli("runs", "--db", str(db_file))
    assert [line.split()[0] for line in listed.splitlines() if line.strip().startswith("scripted-")] == [
        "scripted-steady",
        "scripted-first",
    ]
    out = tmp_path / "study.html"
    cli("compare", "--study", "scripted", "--db", str(db_file), "-o", str(out))
    data = json.loads(out.with_suffix(".json").read_text())
    assert [row["run_id"] for row in data["leaderboard"]] == ["scripted-steady", "scripted-first"]
    assert data["paired"] is True


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--run-id", "mine"], "--run-id: a study names its runs <study id>-<model>; give --study ID instead"),
        (["--study", "none"], None),
    ],
)
def test_study_mistakes_are_one_line_errors(
    db_file: Path, study_toml: Path, extra: list[str], message: str | None
) -> None:
    if message is None:  # --study alone, for a study the database does not hold
        result = CliRunner().invoke(app, ["run", *extra, "--db", str(db_file)])
        assert_one_line_error(result.exit_code, result.output, f"--study none: no runs of this study in {db_file}")
        return
    result = CliRunner().invoke(app, ["run", "--config", str(study_toml), "--db", str(db_file), *DESIGN, *extra])
    assert_one_line_error(result.exit_code, result.output, message)


def test_an_unknown_setting_in_a_study_entry_names_the_entry(db_file: Path, tmp_path: Path) -> None:
    toml = tmp_path / "RUN.toml"
    toml.write_text('[study]\n[[study.models]]\nbackend = "hf-causal"\n[[study.models]]\ntemprature = 0\n')
    result = CliRunner().invoke(app, ["run", "--config", str(toml), "--db", str(db_file)])
    assert_one_line_error(result.exit_code, result.output, f"{toml}: study.models[2].temprature: unknown setting")


@pytest.mark.parametrize(
    ("example", "runs"),
    [
        (
            "smollm2_study.toml",
            {
                "smollm2-hf": ("hf-causal", None),
                "smollm2-llamacpp": ("llamacpp", None),
                "smollm2-hf-fair": ("hf-causal", "Judge"),
            },
        ),
        ("smollm2_wordings.toml", {"wordings-hf": ("hf-causal", None), "wordings-hf-fair": ("hf-causal", "Judge")}),
        ("release_gate.toml", {"release-baseline": ("hf-causal", None), "release-candidate": ("hf-causal", "Judge")}),
    ],
)
def test_the_example_studies_read_as_the_readme_runs_them(
    example: str, runs: dict[str, tuple[str, str | None]], tmp_path: Path
) -> None:
    """The settings of each example in examples/, without running it: its runs, backends and system prompts."""
    path = ROOT / "examples" / example
    config = pipeline.settings({"db": str(tmp_path / "probe.duckdb")}, path)
    configs = pipeline.study_configs(config, (), path)
    prompts = {c.options.run_id: (c.backend.kind, c.backend.system_prompt) for c in configs}
    assert {run_id: (kind, prompt and prompt.split()[0]) for run_id, (kind, prompt) in prompts.items()} == runs
    assert {(c.options.preset, c.design.pairs) for c in configs} == {("quick", 12)}
    wordings = {c.design.wordings for c in configs}
    assert wordings == ({WORDINGS} if example == "smollm2_wordings.toml" else {(PAPER_WORDING,)})
