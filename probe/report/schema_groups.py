"""report.json's sections by group (DESIGN.md section 11): the adverse-impact table, and of a run over name sets
(probe/report/contrasts.py) its findings per contrast, the ranking of each attribute's categories and the groups
section (matrices, grant rates, methods)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

Number = float | None  # an estimate or bound: null where it cannot be estimated


class _Open(BaseModel):
    """An object of a run over name sets' sections: open as every object of the documents is (schema.py's _Open)."""

    model_config = ConfigDict(extra="allow")


class AdverseImpact(_Open):
    """The adverse-impact table: per category a rate and its impact ratio to the highest (DESIGN.md section 11)."""

    method: str
    meaning: str
    rows: list[dict[str, Any]]


class ContrastRow(_Open):
    """A finding of a contrast of two categories of one attribute (a run over name sets; DESIGN.md section 11)."""

    condition: str
    attribute: str
    category_a: str
    category_b: str
    metric: str
    estimate: Number
    ci_low: Number
    ci_high: Number
    p_value: Number
    sets: int | None
    n: int | None
    comparisons: int | None
    method: str | None
    flagged: bool | None


class RankedCategory(_Open):
    """A category's place in its attribute's ranking: its fitted strength with its interval and test of 1 / K."""

    category: str
    rank: int | None
    strength: Number
    ci_low: Number
    ci_high: Number
    p_value: Number = None  # rankings written before the Bradley-Terry fit have none
    sets: int | None
    n: int | None
    method: str | None
    win_share: Number = None  # the pair questions' share of contests won (none for the K-way choice)


class Ranking(_Open):
    """The categories of one attribute and condition ranked by strength (rank 1 the strongest)."""

    condition: str
    attribute: str
    question: str = "pairs"  # pairs (Bradley-Terry over the contests) or kway (Luce over the K-way top picks)
    method: str
    categories: list[RankedCategory]


class PreferenceMatrix(_Open):
    """The K x K preference shares of one attribute and condition: cell (row, column) = the row's share of picks in
    contests between the two (None on the diagonal and where the two never met)."""

    condition: str
    attribute: str
    metric: str = "preference"  # preference (the contests) or kway_preference (the K-way choice's top picks)
    categories: list[str]
    rows: list[list[dict[str, Any] | None]]


class ContrastOccupations(_Open):
    """A contrast's occupation list: how many occupations had a leaning set, and the preferred ones (each with the
    category preferred, the sets leaning to each, its interval at ci_level, p and q)."""

    condition: str
    attribute: str
    category_a: str
    category_b: str
    tested: int
    preferred: list[dict[str, Any]]


class ContrastRobustness(_Open):
    """A contrast's finding across the run's wordings: the verdict, each wording's estimate, the spread and the
    wording test (probe/analysis/robustness.py's procedure)."""

    condition: str
    attribute: str
    category_a: str
    category_b: str
    metric: str
    value: Number
    sets: int | None
    wordings: int | None
    spread: Number
    wording_p: Number
    verdict: str
    meaning: str
    per_wording: list[dict[str, Any]]
    text: str


class Groups(_Open):
    """A run over name sets: its attributes, the report's title words, matrices, grant rates and methods."""

    attributes: list[str]
    title: str
    method: str
    ranking_method: str
    grant_ratio_method: str
    matrices: list[PreferenceMatrix]
    grant_rates: list[dict[str, Any]]
    further: list[dict[str, Any]] | None = None  # per contrast: position, consistency, bias and the gaps, as text
    # per condition and contrast: the occupations tested and those preferred (sign test over sets, Benjamini-Hochberg)
    occupations: list[ContrastOccupations] | None = None
    occupations_method: str | None = None
    robustness: list[ContrastRobustness] | None = None  # a run in several wordings: per contrast and metric
