"""The taxonomy a run asks about: curated occupations, top-k attributes, name pairs, search, `probe taxonomy`
show and search (importing a release: test_onet_import.py)."""

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from probe.common.errors import UserError
from probe.common.resources import resource_dir
from probe.store import db
from probe.taxonomy import name_pairs, occupations
from tests.support import SHARED, assert_one_line_error, invoke

UNQOVER = SHARED / "data" / "names_occupations" / "unqover" / "word_lists"


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    """An in-memory database seeded from the shipped snapshot (the tests using it only read)."""
    connection = db.connect(":memory:")
    yield connection
    connection.close()


# --- curated occupations and top-k -----------------------------------------------------------------


def test_curated_occupations_are_the_papers_62_each_with_ratings(con: duckdb.DuckDBPyConnection) -> None:
    curated = occupations.resolve_occupations(con, None)
    assert len(curated) == 62
    assert curated["note"].str.len().min() > 10
    per_category = con.execute(
        """SELECT o.occupation, r.category, count(*) AS n
           FROM occupations o JOIN attribute_ratings r USING (soc_code) GROUP BY ALL"""
    ).df()
    assert len(per_category) == 62 * 3
    assert per_category["n"].min() >= 33
    top = con.execute("SELECT occupation, category, count(*) AS n FROM occupation_attributes GROUP BY ALL").df()
    assert len(top) == 62 * 3 and set(top["n"]) == {5}
    assert con.execute("SELECT count(*) FROM occupation_attributes").fetchall() == [(930,)]
    assert (
        con.execute(
            "SELECT soc_code, onet_title FROM occupations "
            "WHERE occupation IN ('executive', 'senator', 'politician') ORDER BY ALL"
        ).fetchall()
        == [("11-1011.00", "Chief Executives")] * 3
    )


@pytest.mark.skipif(not UNQOVER.is_dir(), reason="UnQover word lists not found")
def test_curated_occupations_follow_the_unqover_list_minus_eight(con: duckdb.DuckDBPyConnection) -> None:
    lines = (UNQOVER / "activities" / "occupation_rev1").read_text().splitlines()
    titles = [line.split(" was ", 1)[1].split(" ", 1)[1] for line in lines if " was " in line]
    dropped = {"ambassador", "astronomer", "entrepreneur", "general", "intern", "inventor", "marine", "spy"}
    curated = pd.read_csv(resource_dir("taxonomy") / "occupations.csv")
    assert list(curated["occupation"]) == [title for title in titles if title not in dropped]


def test_accountant_top_knowledge(con: duckdb.DuckDBPyConnection) -> None:
    accountant = occupations.resolve_occupations(con, ["accountant"])
    knowledge = occupations.top_attributes(con, accountant).query("category == 'knowledge'")
    assert list(knowledge["element_name"]) == [
        "Economics and Accounting",
        "English Language",
        "Mathematics",
        "Administration and Management",
        "Customer and Personal Service",
    ]
    assert list(knowledge["rank"]) == [1, 2, 3, 4, 5]


def test_top_attributes_breaks_ties_by_level_then_name() -> None:
    con = duckdb.connect()
    con.execute(db.SCHEMA)
    ratings = [
        # (soc_code, category, element_name, importance, level)
        ("00-0001.00", "ability", "Zeta", 4.0, 1.0),
        ("00-0001.00", "ability", "Alpha", 4.0, 1.0),
        ("00-0001.00", "ability", "Mid", 4.0, 3.0),
        ("00-0001.00", "ability", "Top", 4.5, 0.5),
        ("00-0001.00", "skill", "Low", 2.0, 7.0),
        ("00-0001.00", "skill", "High", 3.0, 1.0),
        ("00-0001.00", "knowledge", "Only", 1.0, 0.0),
        ("00-0002.00", "skill", "Other", 5.0, 5.0),
    ]
    con.executemany(
        "INSERT INTO attribute_ratings VALUES (?, ?, ?, ?, ?, ?)",
        [
            (code, category, f"id-{name}", name, importance, level)
            for code, category, name, importance, level in ratings
        ],
    )
    wanted = pd.DataFrame({"occupation": ["b-job", "a-job"], "soc_code": ["00-0001.00", "00-0002.00"]})
    top = occupations.top_attributes(con, wanted, k=3)
    assert list(top.itertuples(index=False, name=None)) == [
        ("a-job", "00-0002.00", "skill", 1, "Other", 5.0, 5.0),
        ("b-job", "00-0001.00", "skill", 1, "High", 3.0, 1.0),
        ("b-job", "00-0001.00", "skill", 2, "Low", 2.0, 7.0),
        ("b-job", "00-0001.00", "knowledge", 1, "Only", 1.0, 0.0),
        ("b-job", "00-0001.00", "ability", 1, "Top", 4.5, 0.5),
        ("b-job", "00-0001.00", "ability", 2, "Mid", 4.0, 3.0),
        ("b-job", "00-0001.00", "ability", 3, "Alpha", 4.0, 1.0),
    ]
    with pytest.raises(UserError, match=r"^top-k must be a positive whole number, got 0$"):
        occupations.top_attributes(con, wanted, k=0)


# --- resolving occupations -------------------------------------------------------------------------


def test_resolve_names_codes_and_titles(con: duckdb.DuckDBPyConnection) -> None:
    resolved = occupations.resolve_occupations(con, "Doctor, nurse,15-1252.00,Astronomers,nurse")
    assert list(resolved[["occupation", "soc_code", "onet_title"]].itertuples(index=False, name=None)) == [
        ("doctor", "29-1215.00", "Family Medicine Physicians"),
        ("nurse", "29-1141.00", "Registered Nurses"),
        ("Software Developers", "15-1252.00", "Software Developers"),
        ("Astronomers", "19-2011.00", "Astronomers"),
    ]
    assert list(resolved["note"])[2:] == ["O*NET occupation given directly"] * 2


def test_resolve_refuses_unknown_and_unrated_occupations(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UserError, match=r"^unknown occupation 'astronomer': .*`probe taxonomy search astronomer`"):
        occupations.resolve_occupations(con, ["astronomer"])
    with pytest.raises(UserError, match=r"^occupation '11-1031.00': 11-1031.00 \(Legislators\) has no skill"):
        occupations.resolve_occupations(con, ["11-1031.00"])


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_resolve_a_users_occupations_csv(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    own = write(tmp_path / "mine.csv", "occupation,soc_code,onet_title,note\nsoftware developer, 15-1252.00,x,\n")
    assert list(occupations.resolve_occupations(con, own).itertuples(index=False, name=None)) == [
        ("software developer", "15-1252.00", "Software Developers", None)
    ]
    assert occupations.resolve_occupations(con, str(own))["soc_code"].tolist() == ["15-1252.00"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "{path}: empty file, expected a header row"),
        ("occupation,soc_code\n", "{path}: no data rows, only a header"),
        (
            "occupation,onet_title\nnurse,x\n",
            "{path}: missing column 'soc_code' (the header has occupation, onet_title)",
        ),
        (
            "occupation,soc_code\nnurse,29-1141.00\nlegislator,11-1031.00\n",
            "{path} line 3: 11-1031.00 (Legislators) has no",
        ),
        ("occupation,soc_code\nnurse,99-9999.00\n", "{path} line 2: '99-9999.00' is not an O*NET-SOC code"),
        (
            "occupation,soc_code\nnurse,29-1141.00\nNurse,29-1141.00\n",
            "{path} line 2: occupation 'nurse' appears",
        ),
        ("occupation,soc_code\n,29-1141.00\n", "{path} line 2: empty occupation"),
    ],
)
def test_occupations_csv_errors_name_file_and_line(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path / "mine.csv", text)
    with pytest.raises(UserError) as raised:
        occupations.resolve_occupations(con, path)
    assert str(raised.value).startswith(message.format(path=path))


# --- name pairs and search -------------------------------------------------------------------------


def test_name_pairs(con: duckdb.DuckDBPyConnection) -> None:
    pairs = name_pairs.select_name_pairs(con, None)
    assert len(pairs) == 70 and list(pairs["pair_id"]) == list(range(1, 71))
    assert tuple(pairs.iloc[0]) == (1, "Mary", "James") and tuple(pairs.iloc[69]) == (
        70,
        "Christina",
        "Harry",
    )
    assert list(name_pairs.select_name_pairs(con, 2).itertuples(index=False, name=None)) == [
        (1, "Mary", "James"),
        (2, "Patricia", "John"),
    ]
    assert name_pairs.select_name_pairs(con, [9, 4, 1])["pair_id"].tolist() == [1, 4, 9]
    assert name_pairs.select_name_pairs(con, "9,4")["pair_id"].tolist() == [4, 9]
    assert len(name_pairs.select_name_pairs(con, "3")) == 3
    for bad, message in [
        (0, "pairs: 0 is not a number of pairs from 1 to 70"),
        (71, "pairs: 71 is not a number of pairs from 1 to 70"),
        ([1, 99], "pairs: no name pair with id 99 (ids run from 1 to 70)"),
        ("two", "pairs: 'two' is neither a number N nor a comma list of pair ids like 1,4,9"),
    ]:
        with pytest.raises(UserError) as raised:
            name_pairs.select_name_pairs(con, bad)
        assert str(raised.value) == message


@pytest.mark.skipif(not UNQOVER.is_dir(), reason="UnQover word lists not found")
def test_name_pairs_follow_the_unqover_lists(con: duckdb.DuckDBPyConnection) -> None:
    def names(gender: str) -> list[str]:
        lines = (UNQOVER / "nouns" / "subjects" / gender).read_text().splitlines()
        return [line.split("|", 1)[1].strip() for line in lines]

    pairs = name_pairs.select_name_pairs(con, None)
    assert (list(pairs["female"]), list(pairs["male"])) == (names("female"), names("male"))


def test_search_ranks_exact_matches_and_says_which_have_ratings(con: duckdb.DuckDBPyConnection) -> None:
    doctors = occupations.search(con, "doctor")
    assert len(doctors) == 20
    assert tuple(doctors.iloc[0][["soc_code", "matched_title", "match", "has_ratings", "curated_as"]]) == (
        "29-1215.00",
        "Doctor",
        "exact",
        True,
        "doctor",
    )
    assert set(doctors["match"].iloc[:12]) == {"exact"}
    legislators = occupations.search(con, "legislators", limit=1)
    assert tuple(legislators.iloc[0][["soc_code", "title", "match", "has_ratings"]]) == (
        "11-1031.00",
        "Legislators",
        "exact",
        False,
    )
    words = occupations.search(con, "developers software")
    assert words.iloc[0]["soc_code"] == "15-1252.00" and words.iloc[0]["match"] == "words"
    assert occupations.search(con, "xyzzy").empty


# --- command line ----------------------------------------------------------------------------------


def test_show_prints_the_three_lists_on_a_fresh_database(tmp_path: Path) -> None:
    code, output = invoke("taxonomy", "show", "accountant", "--db", str(tmp_path / "new.duckdb"))
    assert code == 0, output
    assert "accountant: 13-2011.00 Accountants and Auditors" in output
    for expected in ("skill", "knowledge", "ability", "Economics and Accounting", "4.65", "5.84"):
        assert expected in output
    code, output = invoke("taxonomy", "show", "15-1252.00", "--top-k", "1", "--db", str(tmp_path / "new.duckdb"))
    assert code == 0 and "Programming" in output and "Critical Thinking" not in output


def test_search_command(tmp_path: Path) -> None:
    code, output = invoke("taxonomy", "search", "Legislators", "--db", str(tmp_path / "new.duckdb"))
    assert code == 0, output
    assert "11-1031.00" in output and " no " in output


def test_show_refuses_unknown_occupation_and_bad_top_k(tmp_path: Path) -> None:
    target = str(tmp_path / "probe.duckdb")
    code, output = invoke("taxonomy", "show", "astronomer", "--db", target)
    assert_one_line_error(code, output, "unknown occupation 'astronomer'")
    code, output = invoke("taxonomy", "show", "accountant", "--top-k", "0", "--db", target)
    assert_one_line_error(code, output, "top-k must be a positive whole number, got 0")


def test_shipped_files_carry_attribution() -> None:
    readme = (resource_dir("taxonomy") / "README.md").read_text()
    assert "Used under the CC BY 4.0 license" in " ".join(readme.split())
    assert "Apache License 2.0" in readme
    assert (resource_dir("taxonomy") / "LICENSE-unqover.txt").is_file()
