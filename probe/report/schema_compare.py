"""compare.json's parts for runs over name sets (probe/compare/contrasts.py), beside the document's model in
schema.py: each run's sets, answers and wall time, and the per-contrast differences paired by name set."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

Number = float | None  # an estimate or bound: null where it cannot be estimated


class SetRunRecord(BaseModel):
    """What a compared run adds to its record: its name sets (null for a run over name pairs; `pairs` then counts its
    contests), its answers and its wall time from start to finish."""

    model_config = ConfigDict(extra="allow")

    name_sets: int | None = None
    answers: int | None = None
    wall_seconds: Number = None


class ContrastDifference(BaseModel):
    """run_b minus run_a (the reference) on one contrast, paired by the sets both asked of the same people in the
    same contests; interval and p at the attribute's Bonferroni level (`confidence`)."""

    model_config = ConfigDict(extra="allow")

    condition: str
    attribute: str
    category_a: str
    category_b: str
    metric: str
    run_a: str
    run_b: str
    value_a: Number
    value_b: Number
    difference: Number
    ci_low: Number
    ci_high: Number
    confidence: Number
    p_value: Number
    comparisons: int
    flagged: bool
    sets: int
    n_instances: int
    method: str | None
    note: str | None


class PerContrast(BaseModel):
    """The sets every run asked alike and each contrast's paired difference (empty where a run asked name pairs)."""

    model_config = ConfigDict(extra="allow")

    shared_sets: list[int]
    differences: list[ContrastDifference]
    method: str
    notes: list[str]
