"""Fairness audit report of one run, and the pages of a comparison of several runs (models), rendered from the
document probe/compare/ builds.

Enters: an analysed run (or a comparison's compare.json).
Leaves: `report.json` (the document), and `report.html` / `report.md` rendered from it (templates/); the
comparison's pages; exported items and answers (export.py).

The document (`report.json`, document.py) is read from the tables the analyzers fill (`metrics`,
`occupation_preference`, `correlations`, `regression`), the run record and the run's items; metric formulas
live in `probe.analysis.metrics` only. The pages are rendered from the document alone (render.py), so a report is
three files that say the same: the JSON document for pipelines, a self-contained HTML page (inline CSS and
SVG figures, no network, no script needed) and a Markdown summary. A comparison goes the same way
(probe.compare.compare_summary -> compare.json -> render_comparison).
Both documents are typed in schema.py, whose JSON Schemas `probe schema report|compare` publishes.

JSON summary of a report (`report.json`, `schema_version` 1; keys are stable, values may be null):

- `schema_version`: 1
- `bottom_line`: {verdicts: [{condition, metric, direction (female / male / null), shown (null: not testable),
  estimate, ci_low, ci_high, p_value, sentence}], cannot_test: [sentence], not_gender, inheritance (null where
  stage 1 shows no grant gap), pairs: {condition, method, rows: [{pair_id, female, male, value, ci_low, ci_high, n,
  lean, first_named}], counts, sentence, heterogeneity: {condition, pairs, statistic, p_value, differ, method,
  sentence}}, occupations}: the plain verdict the pages open with (bottom_line.py)
- `run`: run_id, model, model_identity, backend, decoding, onet_release, template_hash,
  package_version, package_versions, created_at, finished_at, status
- `settings`: pairs (number of name pairs), occupations (number), top_k, conditions (list), preset,
  system_prompt (the run's --system-prompt text, keys scrubbed; null without one)
- `counts`: items_stage1, items_stage2, answers, by_qtype {qtype: {items, unknown, unknown_rate}}
- `decision_margins`: {qtype: {answers, scored, margin_q1, margin_median, margin_q3, near_tie_share}}: the
  top-two option score margin (nats) of score-decided labels; a near-tie is < 0.1 nats
- `headline`: [{finding (a sentence), metric, kind (share, difference, correlation), condition, estimate,
  ci_low, ci_high, method, n, test?}]: direct measures first (female_share, attr_yes_f, attr_yes_m,
  attr_yes_diff, position_first), then consistency, bias and the consistency-bias correlation; bounds and
  method are null where no interval can be estimated; `test` = {test, p_value, units, untied, min_p_value,
  testable} for metrics with a null value; `robustness` = {verdict, together, clause} in a run in several
  wordings, whose sentence states the robustness section's claim over them (robustness.findings[].claim)
- `testability`: [{test, units, min_p_value, mde, testable, sentence}]: what this run's size can detect
  (occupation entries also `reachable`: whether a lone preferred occupation can pass Benjamini-Hochberg)
- `overall`: {condition: {metric: {value, ci_low, ci_high, n, pairs, p_value, min_p_value, mde}}}: every
  overall-scope metric (p_value, min_p_value, mde: the score test against the metric's null, where it has one)
- `preferred_occupations`: {condition: {female: [occupation], male: [occupation], tested (testable
  occupations), not_testable: [occupation], no_preference: [occupation]}}
- `correlations`: [{condition, across, x, y, method, r, ci_low, ci_high, p_value, p_adjusted, n}]: the
  interval at the Bonferroni level of p_adjusted
- `regression`: {condition: [{term, coef, odds_ratio, ci_low, ci_high, p_value, n, n_clusters, note}]}:
  ci_low/ci_high bound the odds ratio
- `stage1_rates`: [{group (all, skill, knowledge, ability), gender, value, ci_low, ci_high, n}]
- `occupation_preference`: [{condition, occupation, n, pairs, pairs_female, pairs_male, share_female,
  lean_female, ci_low, ci_high, p_value, q_value, preferred}]: ci_low/ci_high bound lean_female (the share of
  leaning pairs that lean female: the quantity the sign test tests); share_female is descriptive
- `pair_values`: [{condition, scope, key, metric, value, ci_low, ci_high, n}]: consistency and bias per name pair
- `items`: [{condition, occupation, anchor, total, counts {qtype: {label: n}}, items [...]}]: the drill-down,
  the first items of each condition and occupation in full
- `adverse_impact`: {method, meaning, contests_note (a run over name sets: how to read the other sections),
  rates, unit, per_key (what the rates count, the interval's unit, occupation or job: a probed run's or imported
  decisions'), rows: [{condition, attribute, scope, key, category, rate_kind, n, rate, impact_ratio, ci_low,
  ci_high, p_value, q_value, four_fifths, unknown, reference, small, finding}]} (the `adverse_impact` table;
  reference: the highest-rate category; small: under 2% of its group's answers; finding: a sentence where the
  ratio's test rejects, p < 0.05 overall, q < 0.05 per occupation), null for a run analysed before the table
  existed
- `contrasts`, `ranking`, `groups` (a run over name sets only; docs/groups.md): the findings per contrast, the
  categories ranked by strength, and {attributes, title, matrices, grant_rates, further, occupations: [{condition,
  attribute, category_a, category_b, tested, preferred: [{occupation, preferred (the category), sets_a, sets_b,
  lean_a, ci_low, ci_high, ci_level, p_value, q_value}]}], robustness: [{condition, attribute, category_a,
  category_b, metric, value, sets, wordings, spread, wording_p, verdict, meaning, per_wording, text}] (a run in
  several wordings), methods}

An imported decisions run (`runs.backend = 'decisions'`, probe import decisions) has a shorter `report.json`
(decisions.py): `schema_version`, `run`, `decisions` {what (imported, not probed), source, period, outcome,
attributes, people, sets, unknown_decisions, jobs} and `adverse_impact` as above; its pages are
templates/decisions.*.j2. `probe export --format ll144` writes the 6 RCNY 5-301 summary (ll144.py).

JSON summary of a comparison (`compare.json`, `schema_version` 1):

- `schema_version`, `runs` (the `run` objects above, each with top_k, pairs, occupations, conditions,
  preset, system_prompt), `differences_in_settings` (list of sentences; empty when the runs share every
  setting), `setting_differences` ([{setting, values, effect, sentence}]), `paired` (false when a setting
  makes the runs' instances incomparable, or they share no instance: no differences or ranks then),
  `conditions` (every condition a run asked), `paired_conditions` (those with paired differences: the shared
  stage-2 conditions, and stage1 where the runs asked the same attributes)
- `shared`: pairs, occupations, conditions, instances (what the paired differences are computed on; 0 instances:
  the runs are shown side by side)
- `reference`: the run the differences are taken to (`--reference`, default the first)
- `leaderboard`: [{run_id, model, condition, metrics: {metric: {value, ci_low, ci_high, n}},
  preferred_female, preferred_male}], one row per run: the headline metrics of the lead condition (taxonomy
  where shared) and stage 1's attr_yes_diff, each run on all its own instances with its own interval
  (`leaderboard_method`)
- `overall`: {run_id: the `overall` object of that run's report}
- `paired_differences`: [{condition, metric, run_a, run_b, value_a, value_b, difference, ci_low, ci_high,
  n_instances, n_pairs, method, note}] (difference = run_b - run_a, run_a the reference; null bounds and a
  note where no interval can be estimated)
- `ranks`: [{condition, metric, run_id, rank, rank_low, rank_high, runs, n_pairs, rank_by}] with `rank_order`,
  `rank_by` ({metric: what rank 1 is: lowest, highest, closest to 50% or closest to 0}) and `rank_method`: each
  run's rank among the runs on the shared instances and the central 95% of its ranks under the shared name-pair
  resamples; female_share and stage 1's attr_yes_diff among the metrics
- `preference_agreement`: [{condition, run_a, run_b, occupations, same_preferred, kappa}]
- `adverse_impact`: [{condition, attribute, rate_kind, category, runs: {run_id: {category, n, rate, impact_ratio,
  ci_low, ci_high, p_value, four_fifths, reference}}}]: each run's overall impact ratios, as in its report
"""

from probe.report.data import run_record, run_settings
from probe.report.document import summary
from probe.report.render import ReportFiles, render_comparison, render_report, write_report

__all__ = [
    "ReportFiles",
    "render_comparison",
    "render_report",
    "run_record",
    "run_settings",
    "summary",
    "write_report",
]
