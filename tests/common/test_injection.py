"""Nothing in a user's file runs (issue 44): headers and values carrying quotes, `;`, comments, newlines and DuckDB
statements (COPY ... TO, read_text, ATTACH, INSTALL) go through every reader of a user's file and come out as a
one-line error (exit 2) or as literal text: no file is written, no other database changes, no file's contents are
read into what the reader returns. Before the fix, a names file's header was spliced into SQL as an identifier
(probe/common/staging.py), and the first three payloads wrote a file, read one and changed another database.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from probe import pipeline
from probe.answering.decisions import read_decisions
from probe.backends.replay import load_answers
from probe.cli import app
from probe.common.errors import UserError
from probe.common.staging import stage_file
from probe.dataset.items import KEY_FIELDS
from probe.gates.policy import load_policy
from probe.integrations.imports import read_lm_eval_samples
from probe.store.config import RunConfig, read_toml
from probe.store.snapshot import read_occupations_csv
from probe.taxonomy.name_pairs import read_names_csv
from probe.taxonomy.name_sets import read_name_sets
from tests.support import FakeBackend

SECRET = "TOPSECRET-44"
ESCAPES = [  # each closes the quoted identifier it was spliced into, then runs statements of its own
    "sex\" AS c3 FROM (SELECT 1 set_id, 2 name, 3 sex); COPY (SELECT 42) TO '{tmp}/pwned.csv'; SELECT 1 c3 --",
    "sex\" AS c9, (SELECT trim(content) FROM read_text('{tmp}/secret.txt')) AS c3 --",
    "sex\" AS c3 FROM (SELECT 1 set_id, 2 name, 3 sex); ATTACH '{tmp}/other.duckdb' AS o; "
    "UPDATE o.answers SET label = 'pwned'; SELECT 1 c3 --",
    "sex\" AS c3 FROM (SELECT 1 set_id, 2 name, 3 sex); INSTALL '{tmp}/x.duckdb_extension'; SELECT 1 c3 --",
]
PLAIN = ["it's; -- /* x */", "line\nbreak", "a\"b'c"]  # quotes, comments and a newline with no statement
INPUTS = {
    "secret.txt",
    "other.duckdb",
    "sets.csv",
    "decisions.csv",
    "pairs.csv",
    "occupations.csv",
    "codes.csv",
    "answers.csv",
    "samples.jsonl",
    "policy.toml",
    "RUN.toml",
    "probe.duckdb",
    "out",
}
VALUES = ["O'Brien'); DROP TABLE items; --", 'Bo /* c */ "x"', "=read_text('/etc/passwd')"]


@pytest.fixture
def scene(tmp_path: Path) -> Path:
    """A file to steal, another database to change; nothing else in the folder."""
    (tmp_path / "secret.txt").write_text(SECRET)
    other = duckdb.connect(str(tmp_path / "other.duckdb"))
    other.execute("CREATE TABLE answers AS SELECT 'kept' AS label")
    other.close()
    return tmp_path


def harmless(tmp: Path, returned: object) -> None:
    """No file written, the other database as it was, the secret in nothing the reader returned."""
    assert {path.name for path in tmp.iterdir()} - INPUTS == set()
    other = duckdb.connect(str(tmp / "other.duckdb"), read_only=True)
    assert other.execute("SELECT label FROM answers").fetchall() == [("kept",)]
    other.close()
    assert SECRET not in repr(returned)


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def names_sets(path: Path, column: str) -> Path:
    rows = [[s, f"{sex[0]}{s}{letter}", sex, "v"] for s in range(1, 7) for sex, letter in (("F", "a"), ("M", "b"))]
    return write_csv(path, ["set_id", "name", "sex", column], rows)


def read_sets(tmp: Path, column: str) -> object:
    frame = read_name_sets(duckdb.connect(), names_sets(tmp / "sets.csv", column))
    assert column in frame.columns and set(frame[column]) == {"v"}  # a literal column of the file's values
    return frame


def read_pairs(tmp: Path, column: str) -> object:
    path = write_csv(tmp / "pairs.csv", ["female", "male", column], [[VALUES[0], VALUES[1], VALUES[2]]])
    frame = read_names_csv(duckdb.connect(), path)
    assert frame.values.tolist() == [[1, VALUES[0], VALUES[1]]]
    return frame


def read_occupations(tmp: Path, column: str, db_file: Path) -> object:
    path = write_csv(tmp / "occupations.csv", ["occupation", "soc_code", column], [[VALUES[0], "29-1141.00", "v"]])
    con = duckdb.connect(str(db_file))
    try:
        frame = read_occupations_csv(con, path)
    finally:
        con.close()
    assert frame["occupation"].tolist() == [VALUES[0]]
    return frame


def read_staged(tmp: Path, column: str) -> object:
    """The staging every other delimited reader shares (scan code lists, the O*NET release's files)."""
    path = write_csv(tmp / "codes.csv", ["soc_code", column], [[VALUES[0], "v"]])
    con = duckdb.connect()
    stage_file(con, path, "_codes", {"soc_code": "soc_code", column: "extra"}, delimiter=",", label=str(path))
    rows = con.execute("SELECT line, soc_code, extra FROM _codes").fetchall()
    assert rows == [(2, VALUES[0], "v")]
    return rows


def read_replay(tmp: Path, column: str) -> object:
    row = [1, "attr", "stage1", 1, "fm", "", "female", "skill", VALUES[0], "yes", "v"]
    labels = load_answers(write_csv(tmp / "answers.csv", [*KEY_FIELDS, "label", column], [row]))
    assert [key[8] for key in labels] == [VALUES[0]]
    return labels


def toml_text(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def read_policy(tmp: Path, column: str) -> object:
    path = tmp / "policy.toml"
    path.write_text(
        f'[[gates]]\nname = {toml_text(column)}\nkind = "impact_ratio"\ncondition = "taxonomy"\n'
        f"attribute = {toml_text(column)}\n"
    )
    return load_policy(path)


def read_config(tmp: Path, column: str) -> object:
    path = tmp / "RUN.toml"
    path.write_text(f"run_id = {toml_text(column)}\nsystem_prompt = {toml_text(column)}\n")
    return read_toml(path)


def read_imported(tmp: Path, column: str) -> object:
    """`probe import lm-eval`: a sample's exported item carries the text as its id and prompt."""
    doc = {"item_id": column, "prompt": column, "qtype": "binary", "choice_labels": ["yes", "no"]}
    path = tmp / "samples.jsonl"
    path.write_text(json.dumps({"doc": doc, "filtered_resps": [[-1.0, True], [-2.0, False]]}) + "\n")
    answers, _ = read_lm_eval_samples([path])
    assert [(answer.item_id, answer.prompt) for answer in answers] == [(column, column)]
    return answers


def read_imported_decisions(tmp: Path, column: str) -> object:
    """`probe import decisions`: the text as an attribute column's name and as a name, job and category."""
    path = write_csv(
        tmp / "decisions.csv",
        ["set_id", "name", column, "job", "selected"],
        [[1, VALUES[0], column, column, 1], [1, VALUES[1], VALUES[2], column, 0]],
    )
    decisions = read_decisions(path)
    assert decisions.attributes == [column] and decisions.people["name"].tolist() == VALUES[:2]
    assert decisions.categories["category"].tolist() == [column, VALUES[2]]
    return decisions


READERS: dict[str, Callable[..., object]] = {
    "name sets": read_sets,
    "decisions": read_imported_decisions,
    "name pairs": read_pairs,
    "staging": read_staged,
    "replay answers": read_replay,
    "imports": read_imported,
    "policy": read_policy,
    "config": read_config,
}


@pytest.mark.parametrize("reader", [*READERS, "occupations"])
@pytest.mark.parametrize("index", range(len(ESCAPES) + len(PLAIN)))
def test_hostile_headers_and_values_are_text_or_one_line_errors(
    scene: Path, reader: str, index: int, db_file: Path
) -> None:
    text = [*ESCAPES, *PLAIN][index].format(tmp=scene)
    try:
        returned = read_occupations(scene, text, db_file) if reader == "occupations" else READERS[reader](scene, text)
    except UserError as error:
        assert "\n" not in str(error)
        returned = str(error)
    harmless(scene, returned)


def test_a_names_header_runs_nothing_through_the_cli(scene: Path, db_file: Path) -> None:
    """The reported case: `probe run --names FILE --dry-run` with a header that wrote a file."""
    path = names_sets(scene / "sets.csv", ESCAPES[0].format(tmp=scene))
    result = CliRunner().invoke(
        app, ["run", "--names", str(path), "--occupations", "nurse", "--top-k", "1", "--db", str(db_file), "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert not (scene / "pwned.csv").exists()


def test_a_names_header_reads_no_file_into_the_reports(scene: Path, db_file: Path, use_backend) -> None:
    """The reported case: a header calling read_text() copied a local file into report.html, .md and .json."""
    header = ESCAPES[1].format(tmp=scene)
    names = names_sets(scene / "sets.csv", header)
    use_backend(FakeBackend())
    pipeline.run(
        RunConfig(
            names=str(names),
            occupations=("nurse",),
            top_k=1,
            conditions=("taxonomy",),
            db=str(db_file),
            quiet=True,
            run_id="sets",
        )
    )
    pipeline.report(db_file, "sets", scene / "out" / "report.html")
    pages = {path.name: path.read_text() for path in (scene / "out").iterdir()}
    assert sorted(pages) == ["report.html", "report.json", "report.md"]
    assert [name for name, text in pages.items() if SECRET in text] == []
    attributes = {row["attribute"] for row in json.loads(pages["report.json"])["adverse_impact"]["rows"]}
    assert header in attributes  # the header is a literal attribute name
