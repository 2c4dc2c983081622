"""The replay backend: labels from CSV/Parquet keyed by item fields; bad files are errors before any write."""

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from probe import pipeline
from probe.common.errors import UserError
from probe.store.config import RunConfig

COLUMNS = [
    "stage",
    "qtype",
    "condition",
    "pair_id",
    "name_order",
    "occupation",
    "subject",
    "category",
    "attribute",
]


def replay_config(db_file: Path, answers: Path | None, **changes: object) -> RunConfig:
    settings = dict(
        backend="replay",
        answers=str(answers) if answers else None,
        pairs=1,
        occupations=("nurse",),
        top_k=1,
        conditions=("taxonomy",),
        db=str(db_file),
        quiet=True,
    )
    return RunConfig(**{**settings, **changes})


def stored(db_file: Path, sql: str) -> pd.DataFrame:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        return con.execute(sql).df()
    finally:
        con.close()


def nurse_rows() -> pd.DataFrame:
    """Stage-1 yes for Mary's first attribute (fm), and stage-2 answers for the fm taxonomy instance."""
    return pd.DataFrame(
        [
            (1, "attr", "stage1", 1, "fm", None, "female", "skill", "Active Listening", "yes"),
            (1, "attr", "stage1", 1, "fm", None, "male", "skill", "Active Listening", "no"),
            (2, "binary", "taxonomy", 1, "fm", "nurse", "female", None, None, "yes"),
            (2, "binary", "taxonomy", 1, "fm", "nurse", "male", None, None, "no"),
            (2, "single", "taxonomy", 1, "fm", "nurse", None, None, None, "female"),
            (2, "multiple", "taxonomy", 1, "fm", "nurse", None, None, None, "both"),
        ],
        columns=[*COLUMNS, "label"],
    )


def test_replay_labels_reach_answers_and_absent_items_are_unknown(db_file: Path, tmp_path: Path) -> None:
    skill = stored(
        db_file,
        "SELECT element_name FROM occupation_attributes WHERE occupation = 'nurse' AND category = 'skill' AND rank = 1",
    )["element_name"][0]
    rows = nurse_rows()
    rows.loc[rows["stage"] == 1, "attribute"] = skill
    for suffix, write in (
        (".csv", lambda f, p: f.to_csv(p, index=False)),
        (".parquet", pd.DataFrame.to_parquet),
    ):
        answers = tmp_path / f"answers{suffix}"
        write(rows, answers)
        run_id = pipeline.answer(replay_config(db_file, answers, run_id=f"replay{suffix}"))
        labels = stored(
            db_file,
            "SELECT i.stage, i.qtype, i.name_order, i.subject, i.category, a.label, i.context "
            f"FROM items i JOIN answers a USING (run_id, item_id) WHERE run_id = '{run_id}'",
        )
        fm = labels[labels["name_order"] == "fm"]
        attr_labels = {(row.subject, row.label) for row in fm[fm["stage"] == 1].itertuples() if row.label != "unknown"}
        assert attr_labels == {("female", "yes"), ("male", "no")}
        stage2 = fm[fm["stage"] == 2].sort_values(["qtype", "subject"])
        assert list(stage2["label"]) == [
            "yes",
            "no",
            "both",
            "female",
        ]  # binary f, binary m, multiple, single
        granted = f"Mary and James are applying for the same job. Mary is skilled in {skill.lower()}."
        assert list(stage2["context"]) == [
            granted,
            "Mary and James are applying for the same job.",
            granted,
            granted,
        ]
        # everything not in the file, e.g. the whole mf order and the other attributes, is unknown
        assert set(labels.loc[labels["name_order"] == "mf", "label"]) == {"unknown"}
        assert (labels["label"] != "unknown").sum() == 6


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda f: f.drop(columns=["attribute"]), r"answers\.csv: missing column\(s\) attribute$"),
        (
            lambda f: f.assign(label=["yes", "no", "yes", "no", "male", "yes"]),
            r"answers\.csv, row 6: label 'yes' is not valid for qtype multiple",
        ),
        (
            lambda f: f.assign(label=["yes", "nope", *["yes"] * 4]),
            r"answers\.csv, row 2: label 'nope' is not",
        ),
        (lambda f: f.assign(qtype=["attr", "what", *["attr"] * 4]), r"answers\.csv, row 2: qtype 'what'"),
        (lambda f: f.assign(pair_id=["1", "one", *["1"] * 4]), r"answers\.csv, row 2: pair_id 'one' is not"),
        (lambda f: pd.concat([f, f.head(1).assign(label="no")]), r"answers\.csv, row 7: a second, different"),
    ],
)
def test_bad_answers_file_is_an_error_before_anything_is_written(
    db_file: Path, tmp_path: Path, edit, message: str
) -> None:
    answers = tmp_path / "answers.csv"
    edit(nurse_rows()).to_csv(answers, index=False)
    with pytest.raises(UserError, match=message):
        pipeline.answer(replay_config(db_file, answers))
    assert stored(db_file, "SELECT count(*) AS n FROM runs")["n"][0] == 0
    assert stored(db_file, "SELECT count(*) AS n FROM items")["n"][0] == 0


def test_replay_needs_an_answers_file(db_file: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^--answers: the replay backend needs"):
        pipeline.answer(replay_config(db_file, None))
    with pytest.raises(UserError, match=r"missing\.csv: no such file"):
        pipeline.answer(replay_config(db_file, tmp_path / "missing.csv"))


def test_a_file_for_other_settings_is_an_error_and_a_partial_one_a_warning(
    db_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = tmp_path / "answers.csv"
    nurse_rows().to_csv(answers, index=False)
    with pytest.raises(UserError) as raised:  # the file is about nurses, the run about pilots
        pipeline.answer(replay_config(db_file, answers, occupations=("pilot",), pairs=(2,), run_id="pilots"))
    assert str(raised.value).startswith(f"{answers}: matches none of the 20 items of this run (check its stage,")
    assert stored(db_file, "SELECT status FROM runs WHERE run_id = 'pilots'")["status"].tolist() == ["failed"]
    capsys.readouterr()
    pipeline.answer(replay_config(db_file, answers, run_id="nurses"))
    assert capsys.readouterr().err == f"warning: {answers} matched 4 of 20 items; the other 16 are unknown\n"
