"""The typed documents: report.json and compare.json as pydantic models, and the JSON Schemas published from them
(`probe schema report`, `probe schema compare`; DESIGN.md section 13).

Why models and not the docstring alone: a user's pipeline can validate a document against a published, versioned
schema, and the tests validate every document the probe writes against the same schema, so the two cannot drift.

Open to additions: every object allows keys it does not name (`extra="allow"`), so old readers keep working; a new
section is one optional field of `ReportDocument` or `CompareDocument`; keys every document has had are required.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from probe.common.errors import UserError
from probe.report.data import SCHEMA_VERSION
from probe.report.schema_compare import PerContrast, SetRunRecord
from probe.report.schema_groups import AdverseImpact, ContrastRow, Groups, Ranking

Number = float | None  # an estimate or bound: null where it cannot be estimated
Record = dict[str, Any]


class _Open(BaseModel):
    """An object of a document: the named keys are typed, further keys are allowed."""

    model_config = ConfigDict(extra="allow")


class RunRecord(_Open):
    """The run: its model, backend and provenance."""

    run_id: str
    model: str | None
    model_identity: str | None
    backend: str | None
    decoding: str | None
    onet_release: str | None
    template_hash: str | None
    package_version: str | None
    package_versions: str | None
    created_at: str | None
    finished_at: str | None
    status: str | None


class Settings(_Open):
    """The design: number of name pairs and occupations, top-k, conditions, preset, system prompt."""

    pairs: int | None
    occupations: int | None
    top_k: int | None
    conditions: list[str]
    preset: str | None = None
    system_prompt: str | None = None


class Counts(_Open):
    """Items per stage, answers, and per question type the items and unknown answers."""

    items_stage1: int | None
    items_stage2: int | None
    answers: int | None
    by_qtype: dict[str, Record]


class MetricEntry(_Open):
    """One overall metric of one condition."""

    value: Number
    ci_low: Number
    ci_high: Number
    n: int | None = None
    pairs: int | None = None
    p_value: Number = None
    min_p_value: Number = None
    mde: Number = None


class Finding(_Open):
    """A headline finding: a sentence with its estimate, interval, the interval's method and n."""

    finding: str
    metric: str
    kind: str
    condition: str
    estimate: Number
    ci_low: Number
    ci_high: Number
    method: str | None
    n: Any
    test: Record | None = None


class Testability(_Open):
    """What this run's size can detect."""

    test: str
    units: int | None
    min_p_value: Number
    mde: Number
    testable: bool
    sentence: str


class PreferredOccupations(_Open):
    """The occupations preferred for each gender in one condition."""

    female: list[str]
    male: list[str]
    tested: int | None
    not_testable: list[str]
    no_preference: list[str]


class Correlation(_Open):
    """A correlation across pairs or occupations, with its Bonferroni-level interval."""

    condition: str
    across: str
    x: str
    y: str
    method: str
    r: Number
    ci_low: Number
    ci_high: Number
    p_value: Number
    p_adjusted: Number
    n: int | None


class RegressionTerm(_Open):
    """A term of the logistic regression; ci_low / ci_high bound the odds ratio."""

    term: str
    coef: Number
    odds_ratio: Number
    ci_low: Number
    ci_high: Number
    p_value: Number
    n: int | None
    n_clusters: int | None
    note: str | None


class Stage1Rate(_Open):
    """Stage 1's grant rate of one gender over one attribute group."""

    group: str
    gender: str
    value: Number
    ci_low: Number
    ci_high: Number
    n: int | None


class OccupationPreference(_Open):
    """One occupation's sign test over leaning name pairs (ci_low / ci_high bound lean_female)."""

    condition: str
    occupation: str
    n: int | None
    pairs: int | None
    pairs_female: int | None
    pairs_male: int | None
    share_female: Number
    lean_female: Number
    ci_low: Number
    ci_high: Number
    p_value: Number
    q_value: Number
    preferred: str


class ScopedMetric(_Open):
    """A metric per name pair (the consistency-bias figure)."""

    condition: str
    scope: str
    key: str
    metric: str
    value: Number
    ci_low: Number
    ci_high: Number
    n: int | None


class Drilldown(_Open):
    """The first items of one condition and occupation in full, with the label counts of all."""

    condition: str
    occupation: str
    anchor: str
    total: int | None
    counts: dict[str, dict[str, int]]
    items: list[Record]


class BottomLine(_Open):
    """The plain verdict the pages open with."""

    verdicts: list[Record]
    cannot_test: list[str]
    not_gender: str | None
    inheritance: str | None
    pairs: Record | None
    occupations: str | None


class Estimate(_Open):
    """A statistic of the workforce comparison with its interval and method."""

    estimate: Number
    ci_low: Number
    ci_high: Number
    method: str | None


class Workforce(_Open):
    """The model's share beside the workforce's, across occupations (DESIGN.md section 12)."""

    occupations: list[Record]
    n_occupations: int | None
    spearman: Estimate | None
    pearson: Estimate | None
    slope: Estimate | None
    adjusted_slope: Estimate | None = None  # the position in the fit; also estimand, min_verdict_occupations (48)
    contrasts: list[Record] | None = None  # a run over name sets: per contrast, its headline's attribute, category_a/b


class ReportDocument(_Open):
    """report.json: the document of one run; report.html and report.md are rendered from it alone."""

    model_config = ConfigDict(extra="allow", title="report.json")

    schema_version: int = Field(ge=1, le=SCHEMA_VERSION)
    bottom_line: BottomLine | None = None
    run: RunRecord
    settings: Settings
    counts: Counts
    decision_margins: dict[str, Record] = {}
    headline: list[Finding]
    testability: list[Testability] = []
    overall: dict[str, dict[str, MetricEntry]]
    preferred_occupations: dict[str, PreferredOccupations]
    correlations: list[Correlation]
    regression: dict[str, list[RegressionTerm]]
    stage1_rates: list[Stage1Rate]
    occupation_preference: list[OccupationPreference]
    pair_values: list[ScopedMetric]
    items: list[Drilldown]
    robustness: Record | None = None  # a run in several wordings
    workforce: Workforce | None = None  # runs analysed before the comparison existed have none
    adverse_impact: AdverseImpact | None = None  # runs analysed before the table existed have none
    contrasts: list[ContrastRow] | None = None  # a run over name sets only
    ranking: list[Ranking] | None = None  # a run over name sets only
    groups: Groups | None = None  # a run over name sets only


class ComparedRun(RunRecord, SetRunRecord):
    """A run of a comparison: its record and its design."""

    top_k: int | None
    pairs: int | None
    occupations: int | None
    conditions: list[str]


class SettingDifference(_Open):
    """A setting in which the runs differ, and what it does to the comparison."""

    setting: str
    values: dict[str, Any]
    effect: str
    sentence: str


class Shared(_Open):
    """What the paired differences are computed on (`pairs`: a run over name sets' contests, `name_sets` its sets)."""

    pairs: int | None
    name_sets: int | None = None
    occupations: int | None
    conditions: list[str]
    instances: int | None


class LeaderboardRow(_Open):
    """One run's headline metrics of the lead condition, on all its own instances."""

    run_id: str
    model: str | None
    condition: str
    metrics: dict[str, MetricEntry]


class PairedDifference(_Open):
    """run_b minus run_a (the reference) over the name pairs both share (runs over name sets: the sets, `n_pairs`)."""

    condition: str
    metric: str
    run_a: str
    run_b: str
    value_a: Number
    value_b: Number
    difference: Number
    ci_low: Number
    ci_high: Number
    n_instances: int | None
    n_pairs: int | None
    method: str | None
    note: str | None


class Rank(_Open):
    """A run's rank on one metric and the central 95% of its ranks under the shared name-pair (or set) resamples."""

    condition: str
    metric: str
    run_id: str
    rank: int | None
    rank_low: int | None
    rank_high: int | None
    runs: int | None
    n_pairs: int | None


class CompareDocument(_Open):
    """compare.json: every number of a comparison of runs; the comparison's pages are rendered from it alone."""

    model_config = ConfigDict(extra="allow", title="compare.json")

    schema_version: int = Field(ge=1, le=SCHEMA_VERSION)
    runs: list[ComparedRun]
    differences_in_settings: list[str]
    setting_differences: list[SettingDifference] = []
    paired: bool
    conditions: list[str] = []
    paired_conditions: list[str] = []
    shared: Shared
    reference: str
    women_and_men: bool = True  # False where a run asked name sets or imported decisions: no women/men columns
    leaderboard: list[LeaderboardRow]
    overall: dict[str, dict[str, dict[str, MetricEntry]]]
    paired_differences: list[PairedDifference]
    ranks: list[Rank]
    preference_agreement: list[Record]
    adverse_impact: list[Record] | None = None  # comparisons written before the table existed have none
    workforce: Record | None = None  # runs analysed before the comparison existed have none
    heldout: Record | None = None  # only with --heldout-seed
    per_contrast: PerContrast | None = None  # runs over name sets: each contrast's difference, paired by set


class DecisionsReportDocument(_Open):
    """report.json of an imported decisions run (probe/report/decisions.py): what the data is and its adverse impact,
    no probe's settings or metrics."""

    model_config = ConfigDict(extra="allow", title="report.json of imported decisions")

    schema_version: int = Field(ge=1, le=SCHEMA_VERSION)
    run: RunRecord
    decisions: Record
    adverse_impact: AdverseImpact


DOCUMENTS: dict[str, type[_Open]] = {"report": ReportDocument, "compare": CompareDocument}


def published_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of report.json or compare.json at this release's schema_version."""
    if name not in DOCUMENTS:
        raise UserError(f"no schema {name!r}: choose one of {', '.join(DOCUMENTS)}")
    schema = DOCUMENTS[name].model_json_schema(mode="validation")
    if name == "report":
        schema = _or_decisions(schema)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:taxonomy-probe:schema:{name}:{SCHEMA_VERSION}",
        "x-schema-version": SCHEMA_VERSION,
        **schema,
    }


def _or_decisions(report: dict[str, Any]) -> dict[str, Any]:
    """report.json's schema: an imported decisions run's document (it has `decisions`) or else a probed run's; as
    if/then/else, not anyOf, so an error names its path in the document."""
    decisions = DecisionsReportDocument.model_json_schema(mode="validation", ref_template="#/$defs/{model}")
    definitions = {**report.pop("$defs", {}), **decisions.pop("$defs", {})}
    probed = {
        key: report.pop(key) for key in ("type", "properties", "required", "additionalProperties") if key in report
    }
    return {
        **report,
        "$defs": {**definitions, "DecisionsReportDocument": decisions},
        "if": {"required": ["decisions"]},
        "then": {"$ref": "#/$defs/DecisionsReportDocument"},
        "else": probed,
    }
