"""A run over name sets' occupation lists and robustness verdicts per contrast (DESIGN.md section 11): the gender
run's procedures (probe/analysis/preference.py, probe/analysis/robustness.py) applied to each contrast's own cells,
read by the people's categories, with the name set as the unit.

A contrast's cells (metrics.sql `contrast_choice_cells`) have the columns of the gender run's: category_a's person
takes the woman's place (n_female = picks of category_a's person, name order 'fm' = category_a's person named first)
and the set the pair's (pair_id = set_id). So per contrast, each pair of an attribute's categories, each marginal
contrast (women vs men over every mixed-sex contest of a set, pooled within the set) and each intersectional one:

- `contrast_occupations`: per condition and occupation, the sets leaning to each category (a set leans where its
  order-balanced share of picks of category_a is above or below 0.5), the exact sign test, Benjamini-Hochberg over
  the contrast's occupations, `preferred` = the category the occupation leans to where q < 0.05 (NULL: none);
- `contrast_robustness`: for a run asked in more than one wording, per condition the preference (category_a's
  order-balanced share, the mean over sets) and per stage 1 the grant gap (category_a's grant rate minus
  category_b's, paired by set) under each wording, the crossed interval over sets and wordings, the wording test and
  the verdict (holds / depends / some / not_shown / not_testable), as the gender run's robustness rows.

Each contrast is one family of its own, as the gender run's one contrast is: BH runs over a contrast's occupations,
and a robustness verdict is at 0.05 per contrast (not Bonferroni over the attribute's contrasts, as contrast_metrics
are).
"""

from __future__ import annotations

from itertools import combinations

import pandas as pd

from probe.analysis.metric_registry import ATTR_YES_DIFF, FEMALE_SHARE
from probe.analysis.preference import PREFERENCE_COLUMNS, occupation_preference_rows
from probe.analysis.robustness import COLUMNS as ROBUSTNESS_COLUMNS
from probe.analysis.robustness import cell_values, robustness_rows

CONTRAST_KEYS = ["attribute", "category_a", "category_b"]
# occupation_preference's columns by the contrast's categories (a in the woman's place, b in the man's)
OCCUPATION_NAMES = {
    "pairs": "sets",
    "pairs_female": "sets_a",
    "pairs_male": "sets_b",
    "share_female": "share_a",
    "lean_female": "lean_a",
}
OCCUPATION_COLUMNS = [
    "condition",
    *CONTRAST_KEYS,
    *(OCCUPATION_NAMES.get(column, column) for column in PREFERENCE_COLUMNS if column != "condition"),
]
# the gender run's robustness metrics and the contrast's metric each one becomes
ROBUSTNESS_METRICS = {FEMALE_SHARE: "preference", ATTR_YES_DIFF: "grant_gap"}
ROBUSTNESS_TABLE_COLUMNS = [
    "condition",
    *CONTRAST_KEYS,
    *[{"pairs": "sets"}.get(column, column) for column in ROBUSTNESS_COLUMNS if column != "condition"],
]


def contrast_findings(cells: pd.DataFrame, grants: pd.DataFrame | None, wordings: list[str]) -> dict[str, pd.DataFrame]:
    """analyze()'s contrast_occupations and contrast_robustness rows of a run over name sets, from its
    `contrast_choice_cells` and metrics.sql's `contrast_wording_grants` (none for a run in one wording)."""
    return {
        "contrast_occupations": contrast_occupation_rows(cells),
        "contrast_robustness": contrast_robustness_rows(cells, grants, wordings),
    }


def contrast_occupation_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """The contrast_occupations rows from `contrast_choice_cells`: occupation_preference_rows per contrast."""
    frames = []
    for (attribute, a, b), group in cells.groupby(CONTRAST_KEYS, sort=True):
        rows = occupation_preference_rows(group).rename(columns=OCCUPATION_NAMES)
        preferred = rows["preferred"].map({"female": a, "male": b})  # "none": NULL (a category may be named none)
        frames.append(rows.assign(attribute=attribute, category_a=a, category_b=b, preferred=preferred))
    if not frames:
        return pd.DataFrame(columns=OCCUPATION_COLUMNS)
    return pd.concat(frames, ignore_index=True)[OCCUPATION_COLUMNS]


def contrast_robustness_rows(cells: pd.DataFrame, grants: pd.DataFrame, wordings: list[str]) -> pd.DataFrame:
    """The contrast_robustness rows (none for a run in one wording) from `contrast_choice_cells` and
    `contrast_wording_grants`: robustness_rows per contrast, category_a in the woman's place, the set the pair's."""
    if len(wordings) < 2:
        return pd.DataFrame(columns=ROBUSTNESS_TABLE_COLUMNS)
    per_contrast = dict(list(cells.rename(columns={"n_female": FEMALE_SHARE}).groupby(CONTRAST_KEYS)))
    per_attribute = dict(list(grants.groupby("attribute")))
    contrasts = set(per_contrast)
    for attribute, group in per_attribute.items():
        contrasts |= {(attribute, a, b) for a, b in combinations(sorted(set(group["category"])), 2)}
    frames = []
    for attribute, a, b in sorted(contrasts):
        own = per_contrast.get((attribute, a, b), cells.iloc[0:0])
        sided = _sided(per_attribute.get(attribute, grants.iloc[0:0]), a, b)
        values = cell_values(own, sided, (FEMALE_SHARE,))
        rows = robustness_rows(values, wordings, unit="set")
        frames.append(rows.assign(attribute=attribute, category_a=a, category_b=b))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=ROBUSTNESS_COLUMNS)
    table = table.rename(columns={"pairs": "sets"}).assign(metric=table["metric"].map(ROBUSTNESS_METRICS))
    return table.reindex(columns=ROBUSTNESS_TABLE_COLUMNS)


def _sided(grants: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """The two categories' stage-1 counts (of one attribute) per wording and set in wording_grants' columns
    (category_a as female)."""
    own = grants[grants["category"].isin([a, b])]
    own = own.groupby(["condition", "wording", "set_id", "category"], as_index=False)[["hits", "n"]].sum()
    return own.rename(columns={"set_id": "pair_id", "hits": "yes"}).assign(
        subject=own["category"].map({a: "female", b: "male"})
    )
