"""The shipped workforce table (taxonomy/workforce.csv from BLS CPS Table 11, 2022) and the rules that built it."""

import duckdb
import pandas as pd

from probe.store import db
from probe.taxonomy.workforce_build import map_to_onet, read_crosswalk, read_table11, soc_prefix
from tests.support import ROOT, query

TAXONOMY = ROOT / "taxonomy"


def shipped() -> pd.DataFrame:
    return pd.read_csv(TAXONOMY / "workforce.csv", dtype={"census_code": str, "soc_code": str})


def test_hand_checked_rows_match_table_11_of_2022():
    """Values read off BLS Table 11 (2022 annual averages) by hand."""
    table = shipped().set_index("soc_code")
    assert table.loc["29-1141.00", ["census_code", "employed_thousands", "pct_women", "pct_black"]].tolist() == [
        "3255",
        3363.0,
        87.9,
        14.5,
    ]
    assert table.loc["11-1011.00", ["source_title", "pct_women", "pct_hispanic"]].tolist() == [
        "Chief executives",
        29.2,
        6.8,
    ]
    assert table.loc["47-2111.00", "pct_women"] == 2.2  # electricians
    assert table.loc["53-3032.00", ["source_title", "pct_women"]].tolist() == [
        "Driver/sales workers and truck drivers",
        8.1,
    ]
    assert table.loc["25-2021.00", "pct_women"] == 79.7  # elementary and middle school teachers
    assert table.loc["15-1252.00", ["pct_women", "pct_asian"]].tolist() == [21.5, 36.4]  # software developers


def test_blanks_stay_missing_never_zero():
    """Legislators (14,000 employed) and surgeons (48,000): BLS prints a dash, the table keeps no share."""
    table = shipped().set_index("soc_code")
    for code in ("11-1031.00", "29-1241.00"):
        assert table.loc[code, ["pct_women", "pct_white", "pct_asian"]].isna().all()
        assert table.loc[code, "employed_thousands"] > 0
    # a published 0.0 stays 0.0 (Asian surveying and mapping technicians)
    assert table.loc["17-3031.00", "pct_asian"] == 0.0


def test_aggregated_soc_codes_go_to_the_most_specific_census_row():
    table = shipped().set_index("soc_code")["source_title"]
    assert table["29-1215.00"] == "Other physicians"  # 29-12XX: physicians without a row of their own
    assert table["29-1214.00"] == "Emergency medicine physicians"  # its own row beats 29-12XX
    assert table["11-2032.00"] == "Public relations and fundraising managers"  # broad 11-2030
    assert table["25-1011.00"] == "Postsecondary teachers"  # minor group 25-1000
    assert table["29-1022.00"] == "Dentists"  # broad 29-1020: oral surgeons are dentists
    assert [soc_prefix(code) for code in ("11-1011", "11-2030", "25-1000", "13-20XX", "15-124X")] == [
        "11-1011",
        "11-203",
        "25-1",
        "13-20",
        "15-124",
    ]


def test_coverage_of_the_62_and_of_all_titles():
    table = shipped()
    occupations = pd.read_csv(TAXONOMY / "occupations.csv").merge(table, on="soc_code", how="left")
    assert (len(table), int(table["pct_women"].notna().sum())) == (997, 708)
    assert (int(occupations["census_code"].notna().sum()), int(occupations["pct_women"].notna().sum())) == (62, 56)
    no_share = sorted(occupations.loc[occupations["pct_women"].isna(), "occupation"])
    assert no_share == ["athlete", "captain", "dancer", "hunter", "model", "research assistant"]
    assert table["soc_code"].is_unique and table["year"].eq(2022).all()


def test_builder_parses_the_bls_layout(tmp_path):
    """A Table 11 CSV as BLS writes it (heading lines, thousands separators, dashes) and a crosswalk."""
    heading = "\n".join(['"HOUSEHOLD DATA"', "[Numbers in thousands]", "", "Occupation,2022", "", "", "", ""])
    rows = [
        '"Total, 16 years and over","158,291",46.8,77.0,12.6,6.7,18.5',
        'Registered nurses,"3,363",87.9,73.6,14.5,8.9,8.1',
        "Legislators,14," + ",".join(["\u2013"] * 5),
        '"Embalmers, crematory operators, and funeral attendants",50,31.0,80.0,10.0,1.0,9.0',
    ]
    (tmp_path / "t11.csv").write_text(heading + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "x.csv").write_text(
        "2018 Census Title ,2018 Census Code,2018 SOC Code\nRegistered nurses,3255,29-1141\n"
        'Legislators,0030,11-1031\n"Embalmers, crematory operators and funeral attendants",4461,39-40XX\n'
        '"Military, rank not Specified",9830,none\n'
    )
    onet = ["11-1031.00", "29-1141.00", "29-1141.01", "39-4011.00", "39-4031.00", "55-1011.00"]
    table = map_to_onet(read_table11(tmp_path / "t11.csv"), read_crosswalk(tmp_path / "x.csv"), onet)
    assert table["soc_code"].tolist() == onet[:5]
    assert table["pct_women"].isna().tolist() == [True, False, False, False, False]
    assert table["pct_women"].tolist()[1:] == [87.9, 87.9, 31.0, 31.0]
    assert table.loc[1, "employed_thousands"] == 3363.0
    assert table["census_code"].tolist() == ["0030", "3255", "3255", "4461", "4461"]


def test_new_database_is_seeded_with_the_workforce_table(db_file):
    seeded = query(db_file, "SELECT count(*) AS n, count(pct_women) AS shares FROM workforce")
    assert seeded.iloc[0].tolist() == [997, 708]
    nurse = query(db_file, "SELECT pct_women, year FROM workforce WHERE soc_code = '29-1141.00'")
    assert nurse.iloc[0].tolist() == [87.9, 2022]


def test_a_database_from_before_the_table_gains_it_on_its_next_open(db_file):
    con = duckdb.connect(str(db_file))
    con.execute("DROP TABLE workforce")
    con.close()
    db.connect(db_file).close()
    assert query(db_file, "SELECT count(*) AS n FROM workforce").iloc[0, 0] == 997
