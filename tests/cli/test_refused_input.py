"""The remaining hostile inputs of issue 44, each refused with one exact line and exit 2, or printed escaped: a
names column posing as a computed one, the crashes (set ids, a scoring gate without scores, deep or endless TOML,
ragged name-set rows), text past its length, unescaped attributes in compare.md, inexact replay files, workforce
shares that are no percentages and NaN or Infinity in report.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from typer.testing import CliRunner

from probe import pipeline
from probe.cli import app
from probe.common.errors import UserError
from probe.common.escape import strict_json
from probe.common.resources import resource_dir
from probe.store import db, snapshot
from probe.store.config import RunConfig
from probe.taxonomy.name_sets import read_name_sets
from tests.support import FakeBackend, unknown_answers

LONG = "a" * 201


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def sets_csv(path: Path, header: str = "set_id,name,sex", rows: str | None = None) -> Path:
    rows = rows if rows is not None else "".join(f"{s},F{s},female\n{s},M{s},male\n" for s in range(1, 7))
    path.write_text(f"{header}\n{rows}", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("header", "rows", "message"),
    [
        (
            "set_id,name,sex,race,sex x race",
            "1,Ann,f,b,f x b\n",
            "{p} header: an attribute column may not be named "
            "'sex x race' (the name of a column computed from the others: 'category', or an intersection 'a x b')",
        ),
        (
            "set_id,name,category",
            "1,Ann,f\n",
            "{p} header: an attribute column may not be named 'category' (the name "
            "of a column computed from the others: 'category', or an intersection 'a x b')",
        ),
        ("set_id,name,sex,sex", "1,Ann,f,f\n", "{p} header: column 'sex' twice"),
        ("set_id,name,sex", "\u00b2,Ann,female\n", "{p} line 2: set_id '\u00b2' is not a positive whole number"),
        ("set_id,name,sex", "2147483648,Ann,female\n", "{p} line 2: set_id 2147483648 is larger than 2147483647"),
        ("set_id,name,sex", "1,Ann,female\n1,Bob\n", "{p} line 3: 2 fields, the header has 3 (set_id, name, sex)"),
        ("set_id,name,sex", "1,Ann,female,\n", "{p} line 2: 4 fields, the header has 3 (set_id, name, sex)"),
        (
            "set_id,name,sex",
            "1,Ann,female x Black\n",
            "{p} line 2: sex 'female x Black' contains ' x ', which joins "
            "the categories of an intersection; use another word",
        ),
        ("set_id,name,sex", f"1,Ann,{LONG}\n", f"{{p}} line 2: '{'a' * 20}'... is 201 characters long; at most 200"),
        ("set_id,name,sex", f"1,{LONG},female\n", f"{{p}} line 2: '{'a' * 20}'... is 201 characters long; at most 200"),
        (f"set_id,name,{LONG}", "1,Ann,female\n", f"{{p}} header: '{'a' * 20}'... is 201 characters long; at most 200"),
    ],
)
def test_bad_name_set_files_are_one_exact_line(tmp_path: Path, header: str, rows: str, message: str) -> None:
    path = sets_csv(tmp_path / "sets.csv", header, rows)
    with pytest.raises(UserError) as raised:
        read_name_sets(duckdb.connect(), path)
    assert str(raised.value) == message.format(p=path)


def test_a_set_id_past_the_integer_column_is_refused_at_dry_run(tmp_path: Path, db_file: Path) -> None:
    path = sets_csv(
        tmp_path / "sets.csv",
        rows="".join(f"{s},F{s},female\n{s},M{s},male\n" for s in range(1, 6))
        + "2147483648,F6,female\n2147483648,M6,male\n",
    )
    code, output = cli("run", "--names", str(path), "--occupations", "nurse", "--db", str(db_file), "--dry-run")
    assert (code, output) == (2, f"error: {path} line 12: set_id 2147483648 is larger than 2147483647\n")


def test_a_long_name_in_a_pairs_file_is_refused(tmp_path: Path, db_file: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text(f"female,male\nAnn,{LONG}\n")
    code, output = cli("run", "--names", str(path), "--occupations", "nurse", "--db", str(db_file), "--dry-run")
    assert (code, output) == (2, f"error: {path} line 2: '{'a' * 20}'... is 201 characters long; at most 200\n")


@pytest.mark.parametrize("reader", ["gate", "run"])
def test_toml_nested_900_deep_or_endless_is_one_line(tmp_path: Path, db_file: Path, reader: str) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 900 + "]" * 900 + "\n")
    flat = tmp_path / "seventeen.toml"
    flat.write_text("x = " + "[" * 16 + "]" * 16 + "\n")  # the top table and 16 arrays: 17 levels
    option = "--policy" if reader == "gate" else "--config"
    for path in (deep, flat):
        code, output = cli(reader, *(["first"] if reader == "gate" else []), option, str(path), "--db", str(db_file))
        assert (code, output) == (2, f"error: {path}: nested more than 16 levels deep\n")
    code, output = cli(reader, *(["first"] if reader == "gate" else []), option, "/dev/zero", "--db", str(db_file))
    assert (code, output) == (2, "error: /dev/zero: larger than 1 MiB; a settings or policy file is a few lines\n")


def test_an_imported_sample_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    from probe.integrations.imports import read_lm_eval_samples

    path = tmp_path / "samples.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(UserError) as raised:
        read_lm_eval_samples([path])
    assert str(raised.value) == f"{path}, line 1: JSON nested too deeply for a sample"


def test_a_scoring_gate_on_a_run_without_option_scores_is_one_line(tmp_path: Path, db_file: Path, use_backend) -> None:
    use_backend(FakeBackend())  # labels only, no option scores
    config = RunConfig(
        names=str(sets_csv(tmp_path / "sets.csv")),
        occupations=("nurse",),
        top_k=1,
        conditions=("taxonomy",),
        db=str(db_file),
        quiet=True,
        run_id="sets",
    )
    pipeline.run(config)
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[[gates]]\nname = "scored"\nkind = "impact_ratio"\ncondition = "taxonomy"\n'
        'attribute = "sex"\nrate_kind = "scoring"\n'
    )
    code, output = cli("gate", "sets", "--policy", str(policy), "--db", str(db_file), "-o", str(tmp_path / "out"))
    assert (code, output) == (
        2,
        "error: gate 'scored': run 'sets' has no scoring rates of 'sex' in condition "
        "taxonomy (its rate kinds: contest, selection; the scoring rate needs a run whose "
        "answers were decided by option scores)\n",
    )
    assert not (tmp_path / "out").exists()


def test_every_page_escapes_attributes_categories_and_names(tmp_path: Path, db_file: Path, use_backend) -> None:
    """compare.md printed an attribute's name raw: a header `<b>x</b>|*y*` made markup and broke the table."""
    attribute, categories = "<b>x</b>|*y*", ("<i>c</i>|", "[l](http://e)")
    rows = "".join(f"{s},A{s}<u>,{categories[0]}\n{s},B{s}`,{categories[1]}\n" for s in range(1, 7))
    names = sets_csv(tmp_path / "sets.csv", f"set_id,name,{attribute}", rows)
    use_backend(FakeBackend())
    for run_id in ("one", "two"):
        pipeline.run(
            RunConfig(
                names=str(names),
                occupations=("nurse",),
                top_k=1,
                conditions=("taxonomy",),
                db=str(db_file),
                quiet=True,
                run_id=run_id,
            )
        )
    pipeline.report(db_file, "one", tmp_path / "report.html")
    pipeline.compare(db_file, ["one", "two"], tmp_path / "compare.html")
    for page in ("report", "compare"):
        markdown = (tmp_path / f"{page}.md").read_text()
        html = (tmp_path / f"{page}.html").read_text()
        assert "\\<b>x\\</b>\\|\\*y\\*" in markdown
        for raw in ("<b>", "<i>", "<u>", "|*y*", "c</i>|", "](http"):
            assert raw not in markdown.replace("\\" + raw[0], ""), (page, raw)
        for raw in ("<b>", "<i>", "<u>"):
            assert raw not in html, (page, raw)


@pytest.mark.parametrize("pair_id", ["1_0", "\uff11"])
def test_a_replay_pair_id_is_ascii_digits(tmp_path: Path, db_file: Path, pair_id: str) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_text(
        "stage,qtype,condition,pair_id,name_order,occupation,subject,category,attribute,label\n"
        f"1,attr,stage1,{pair_id},fm,,female,skill,x,yes\n",
        encoding="utf-8",
    )
    code, output = cli(
        "run", "--backend", "replay", "--answers", str(answers), "--occupations", "nurse", "--db", str(db_file)
    )
    assert (code, output) == (2, f"error: {answers}, row 1: pair_id '{pair_id}' is not an integer\n")


def test_a_pairs_runs_replay_file_is_refused_on_a_sets_run(tmp_path: Path, db_file: Path) -> None:
    """Matched by pair_id alone, a pairs run's answers answered for a sets run's other people."""
    settings = dict(
        backend="replay", occupations=("nurse",), top_k=1, conditions=("taxonomy",), db=str(db_file), quiet=True
    )
    answers = unknown_answers(tmp_path / "answers.csv", **settings)  # the shipped name pairs
    names = sets_csv(tmp_path / "sets.csv")
    code, output = cli(
        "run",
        "--backend",
        "replay",
        "--answers",
        str(answers),
        "--names",
        str(names),
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "taxonomy",
        "--db",
        str(db_file),
    )
    first = pd.read_csv(answers).iloc[0]
    *found, error = output.splitlines(keepends=True)  # what the names file holds is said first
    assert found[0].startswith("name sets in ")
    assert (code, error) == (
        2,
        f"error: {answers}, row 1: names {first['first_name']}/{first['second_name']}, but "
        "pair 1 (fm) of this run asks about F1/M1; a replay file answers only for the "
        "people it names\n",
    )
    bare = tmp_path / "bare.csv"
    pd.read_csv(answers).drop(columns=["first_name", "second_name"]).to_csv(bare, index=False)
    code, output = cli(
        "run",
        "--backend",
        "replay",
        "--answers",
        str(bare),
        "--names",
        str(names),
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "taxonomy",
        "--db",
        str(db_file),
    )
    *found, error = output.splitlines(keepends=True)
    assert (code, error) == (
        2,
        f"error: {bare}: a run over name sets needs the columns first_name and second_name "
        "(the people each row answers for, as `probe export` writes items), so that a file "
        "made for other people is not matched by pair_id alone\n",
    )


@pytest.mark.parametrize(("value", "shown"), [("inf", "inf"), ("nan", "nan"), ("100.5", "100.5"), ("-1", "-1.0")])
def test_workforce_shares_are_percentages_when_seeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, shown: str
) -> None:
    folder = Path(shutil.copytree(resource_dir("taxonomy"), tmp_path / "taxonomy"))
    table = pd.read_csv(folder / "workforce.csv", dtype=str)
    table.loc[0, "pct_black"] = value
    table.to_csv(folder / "workforce.csv", index=False)
    monkeypatch.setattr(snapshot, "resource_dir", lambda name: folder)
    with pytest.raises(UserError) as raised:
        db.connect(tmp_path / "probe.duckdb").close()
    assert str(raised.value) == (
        f"{folder / 'workforce.csv'}: {table.loc[0, 'soc_code']} pct_black is {shown}, "
        "not a share from 0 to 100 (percent)"
    )


def test_json_documents_carry_no_nan_or_infinity() -> None:
    document = {"ci": [0.5, float("inf")], "rows": [{"rate": float("nan"), "n": 3}], "p": -float("inf")}
    assert json.loads(strict_json(document)) == {"ci": [0.5, None], "rows": [{"rate": None, "n": 3}], "p": None}
