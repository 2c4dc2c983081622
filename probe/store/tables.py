"""The DDL of every table in the store (DESIGN.md section 4 for the contract tables; extra columns are additions):
one place a newcomer reads to see what each hand-off of the pipeline holds. db.py creates and checks them."""

from __future__ import annotations

from probe.store.snapshot import WORKFORCE_TABLE

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS onet_release (
    release VARCHAR, source VARCHAR, imported_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS onet_occupations (
    soc_code VARCHAR PRIMARY KEY, title VARCHAR, description VARCHAR
);
CREATE TABLE IF NOT EXISTS onet_alternate_titles (
    soc_code VARCHAR, alternate_title VARCHAR
);
CREATE TABLE IF NOT EXISTS attribute_ratings (
    soc_code VARCHAR, category VARCHAR, element_id VARCHAR, element_name VARCHAR,
    importance DOUBLE, level DOUBLE
);
CREATE TABLE IF NOT EXISTS occupations (
    occupation VARCHAR PRIMARY KEY, soc_code VARCHAR, onet_title VARCHAR, note VARCHAR
);
CREATE TABLE IF NOT EXISTS occupation_attributes (
    occupation VARCHAR, soc_code VARCHAR, category VARCHAR, rank INTEGER,
    element_name VARCHAR, importance DOUBLE, level DOUBLE
);
CREATE TABLE IF NOT EXISTS name_pairs (
    pair_id INTEGER PRIMARY KEY, female VARCHAR, male VARCHAR
);
-- Who does each job, per labour-statistics source (the shipped one: taxonomy/workforce.csv, BLS CPS Table 11 by
-- O*NET-SOC code; shares in percent, NULL where the source publishes none), seeded like the taxonomy and reseeded
-- when the shipped source changes (probe/store/snapshot.py). Older databases gain `source` here and are rekeyed to
-- (source, soc_code) when seeded.
{WORKFORCE_TABLE};
ALTER TABLE workforce ADD COLUMN IF NOT EXISTS source VARCHAR;
-- Each source's descriptor: its citation (what reports quote), year, licence, the key it joins O*NET on, and the
-- sha256 of the files it was loaded from.
CREATE TABLE IF NOT EXISTS workforce_sources (
    source VARCHAR PRIMARY KEY, citation VARCHAR, year INTEGER, licence VARCHAR, join_key VARCHAR,
    file_sha256 VARCHAR, loaded_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, created_at TIMESTAMP, model VARCHAR, backend VARCHAR,
    config_json VARCHAR, status VARCHAR, template_hash VARCHAR, package_version VARCHAR,
    finished_at TIMESTAMP, backend_json VARCHAR, versions_json VARCHAR
);
-- The O*NET release the run's attributes came from (added later: older databases gain the column here).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS onet_release VARCHAR;
-- The model names an OpenAI-compatible server put in its replies (comma-separated), where they were given.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS served_model VARCHAR;
-- The attributes each run used, frozen at run time so a later O*NET import cannot change a stored run.
CREATE TABLE IF NOT EXISTS run_attributes (
    run_id VARCHAR, occupation VARCHAR, soc_code VARCHAR, category VARCHAR, rank INTEGER,
    element_name VARCHAR, importance DOUBLE, level DOUBLE
);
-- The name pairs each run used (the shipped ones or a --names file), frozen with it like its attributes.
CREATE TABLE IF NOT EXISTS run_name_pairs (
    run_id VARCHAR, pair_id INTEGER, female VARCHAR, male VARCHAR
);
-- A run over name sets (probe/taxonomy/name_sets.py): each contest (a pair_id of run_name_pairs; its female / male
-- = the first / second person) with its set and each person's (slot female / male) category per attribute.
CREATE TABLE IF NOT EXISTS run_contests (
    run_id VARCHAR, pair_id INTEGER, set_id INTEGER, slot VARCHAR, attribute VARCHAR, category VARCHAR
);
-- The person (run_people) in each slot: items (pair_id, subject = slot) join their people through it. NULL in runs
-- recorded before people were stored.
ALTER TABLE run_contests ADD COLUMN IF NOT EXISTS person_id INTEGER;
-- A run's people (DESIGN.md section 11), stored once: each person of a name set or imported decisions file with the
-- set it belongs to, and one row per attribute in run_person_categories (the person's own category, never a slot).
CREATE TABLE IF NOT EXISTS run_people (
    run_id VARCHAR, person_id INTEGER, set_id INTEGER, name VARCHAR
);
CREATE TABLE IF NOT EXISTS run_person_categories (
    run_id VARCHAR, person_id INTEGER, attribute VARCHAR, category VARCHAR
);
-- Imported decisions (probe import decisions / bloomberg): each person's decision in its set, one row per person of
-- run_people: selected (0/1) or rank (1 = top; selected = rank 1), the score where given, the job and the source.
-- NULL selected and rank: the decision is missing (an unknown).
CREATE TABLE IF NOT EXISTS run_decisions (
    run_id VARCHAR, person_id INTEGER, job VARCHAR, selected BOOLEAN, rank INTEGER, score DOUBLE, source VARCHAR
);
CREATE TABLE IF NOT EXISTS items (
    run_id VARCHAR, item_id VARCHAR, stage INTEGER, qtype VARCHAR, condition VARCHAR,
    pair_id INTEGER, name_order VARCHAR, occupation VARCHAR, subject VARCHAR,
    attribute VARCHAR, category VARCHAR, prompt VARCHAR,
    context VARCHAR, question VARCHAR, options_json VARCHAR,
    first_name VARCHAR, second_name VARCHAR, seq INTEGER,
    PRIMARY KEY (run_id, item_id)
);
-- The paraphrase an item was asked in (prompts/wordings/; probe run --wordings): items before it, the paper's.
ALTER TABLE items ADD COLUMN IF NOT EXISTS wording VARCHAR DEFAULT 'paper';
-- scores_json: canonical label -> option log-likelihood, every option of the answer space, only where
-- decided_by = 'score' (label = argmax); decided_by: score | generate | span | replay.
CREATE TABLE IF NOT EXISTS answers (
    run_id VARCHAR, item_id VARCHAR, raw VARCHAR, label VARCHAR, scores_json VARCHAR,
    error VARCHAR, cached BOOLEAN, answered_at TIMESTAMP, decided_by VARCHAR,
    PRIMARY KEY (run_id, item_id)
);
-- Content-addressed: key = hash(model identity, decoding settings, prompt, options).
CREATE TABLE IF NOT EXISTS answer_cache (
    cache_key VARCHAR PRIMARY KEY, raw VARCHAR, label VARCHAR, scores_json VARCHAR, created_at TIMESTAMP,
    decided_by VARCHAR
);
-- Databases written before decided_by existed.
ALTER TABLE answers ADD COLUMN IF NOT EXISTS decided_by VARCHAR;
ALTER TABLE answer_cache ADD COLUMN IF NOT EXISTS decided_by VARCHAR;
CREATE TABLE IF NOT EXISTS metrics (
    run_id VARCHAR, condition VARCHAR, scope VARCHAR, key VARCHAR, metric VARCHAR,
    value DOUBLE, ci_low DOUBLE, ci_high DOUBLE, n BIGINT
);
CREATE TABLE IF NOT EXISTS occupation_preference (
    run_id VARCHAR, condition VARCHAR, occupation VARCHAR, n BIGINT, share_female DOUBLE,
    ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, q_value DOUBLE, preferred VARCHAR
);
CREATE TABLE IF NOT EXISTS correlations (
    run_id VARCHAR, condition VARCHAR, across VARCHAR, x VARCHAR, y VARCHAR, method VARCHAR,
    r DOUBLE, p_value DOUBLE, n BIGINT
);
-- Databases analysed before inference over name pairs: the pair counts, tests and testability columns.
ALTER TABLE metrics ADD COLUMN IF NOT EXISTS pairs BIGINT;
ALTER TABLE metrics ADD COLUMN IF NOT EXISTS p_value DOUBLE;
ALTER TABLE metrics ADD COLUMN IF NOT EXISTS min_p_value DOUBLE;
ALTER TABLE metrics ADD COLUMN IF NOT EXISTS mde DOUBLE;
ALTER TABLE occupation_preference ADD COLUMN IF NOT EXISTS pairs BIGINT;
ALTER TABLE occupation_preference ADD COLUMN IF NOT EXISTS pairs_female BIGINT;
ALTER TABLE occupation_preference ADD COLUMN IF NOT EXISTS pairs_male BIGINT;
ALTER TABLE occupation_preference ADD COLUMN IF NOT EXISTS lean_female DOUBLE;
ALTER TABLE correlations ADD COLUMN IF NOT EXISTS ci_low DOUBLE;
ALTER TABLE correlations ADD COLUMN IF NOT EXISTS ci_high DOUBLE;
ALTER TABLE correlations ADD COLUMN IF NOT EXISTS p_adjusted DOUBLE;
-- Databases analysed before each interval named its method (probe/analysis/statistics.py METHODS) and the
-- occupation intervals took the level of the decision beside them.
ALTER TABLE metrics ADD COLUMN IF NOT EXISTS method VARCHAR;
ALTER TABLE occupation_preference ADD COLUMN IF NOT EXISTS ci_level DOUBLE;
-- Stored by analyze() for the later steps: per stage-2 instance (or unit of two) each instance metric's hits and n
-- (metrics.sql instance_units); per condition each name pair's share and the pairs' heterogeneity test (pairs.py).
CREATE TABLE IF NOT EXISTS instance_metrics (run_id VARCHAR, condition VARCHAR, pair_id INTEGER, occupation VARCHAR,
    wording VARCHAR, name_order VARCHAR, other_condition VARCHAR, other_name_order VARCHAR, metric VARCHAR,
    hits BIGINT, n BIGINT);
CREATE TABLE IF NOT EXISTS pair_shares (run_id VARCHAR, condition VARCHAR, pair_id INTEGER, value DOUBLE,
    ci_low DOUBLE, ci_high DOUBLE, n BIGINT, lean VARCHAR);
CREATE TABLE IF NOT EXISTS pair_heterogeneity (run_id VARCHAR, condition VARCHAR, pairs BIGINT, statistic DOUBLE,
    p_value DOUBLE, differ BOOLEAN);
-- Stored by analyze() for the gates and the LL144 summary, which build their intervals at the levels a policy or the
-- 2% exclusion asks from these counts instead of the answers: metrics.sql's impact_counts of the overall scope (per
-- condition, attribute, rate kind, set, category and, for imported decisions, name), and for runs over name sets its
-- contrast_counts (per contrast and set) and grant_counts (per category and set).
CREATE TABLE IF NOT EXISTS impact_counts (run_id VARCHAR, condition VARCHAR, attribute VARCHAR, rate_kind VARCHAR,
    scope VARCHAR, key VARCHAR, set_id INTEGER, category VARCHAR, name VARCHAR, hits BIGINT, n BIGINT, unknown BIGINT);
CREATE TABLE IF NOT EXISTS contrast_counts (run_id VARCHAR, condition VARCHAR, attribute VARCHAR, set_id INTEGER,
    category_a VARCHAR, category_b VARCHAR, hits BIGINT, n BIGINT);
CREATE TABLE IF NOT EXISTS grant_counts (run_id VARCHAR, condition VARCHAR, attribute VARCHAR, set_id INTEGER,
    category VARCHAR, hits BIGINT, n BIGINT, unknown BIGINT);
-- Findings under a change of wording (probe/analysis/robustness.py), for runs asked in more than one wording: per
-- condition and metric a row per wording (scope wording, key = its id) and the crossed row (scope crossed, key all)
-- with the spread between wordings, the wording test, the pair-only interval and the verdict.
CREATE TABLE IF NOT EXISTS robustness (
    run_id VARCHAR, condition VARCHAR, metric VARCHAR, scope VARCHAR, key VARCHAR, value DOUBLE, ci_low DOUBLE,
    ci_high DOUBLE, p_value DOUBLE, pairs BIGINT, wordings BIGINT, method VARCHAR, spread DOUBLE, wording_p DOUBLE,
    pair_ci_low DOUBLE, pair_ci_high DOUBLE, verdict VARCHAR
);
-- The workforce comparison (probe/analysis/workforce.py): per condition the correlations and the amplification slope
-- across occupations with their intervals, and each occupation's share beside the workforce's.
CREATE TABLE IF NOT EXISTS workforce_fit (
    run_id VARCHAR, condition VARCHAR, statistic VARCHAR, estimate DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
    n_occupations BIGINT, pairs BIGINT, method VARCHAR, verdict VARCHAR
);
-- The labour-statistics source the fit compared with (added later: older rows are the shipped source's).
ALTER TABLE workforce_fit ADD COLUMN IF NOT EXISTS source VARCHAR;
CREATE TABLE IF NOT EXISTS workforce_occupations (
    run_id VARCHAR, condition VARCHAR, occupation VARCHAR, soc_code VARCHAR, model_share DOUBLE, ci_low DOUBLE,
    ci_high DOUBLE, method VARCHAR, workforce_share DOUBLE, departure DOUBLE, versus VARCHAR
);
-- Runs over name sets (issue 45): the comparison per contrast of two categories the source has shares for (sex:
-- female / male; race_ethnicity: Asian, Black, Hispanic, White), by the people's own categories; NULL for a run over
-- name pairs (its one comparison is the woman's share).
ALTER TABLE workforce_fit ADD COLUMN IF NOT EXISTS attribute VARCHAR;
ALTER TABLE workforce_fit ADD COLUMN IF NOT EXISTS category_a VARCHAR;
ALTER TABLE workforce_fit ADD COLUMN IF NOT EXISTS category_b VARCHAR;
ALTER TABLE workforce_occupations ADD COLUMN IF NOT EXISTS attribute VARCHAR;
ALTER TABLE workforce_occupations ADD COLUMN IF NOT EXISTS category_a VARCHAR;
ALTER TABLE workforce_occupations ADD COLUMN IF NOT EXISTS category_b VARCHAR;
-- The adverse-impact table (probe/analysis/impact.py; DESIGN.md section 11): per condition, attribute, scope and
-- category each rate kind's rate and its impact ratio to the highest-rate category, with the ratio's interval and test
-- over name sets.
CREATE TABLE IF NOT EXISTS adverse_impact (
    run_id VARCHAR, condition VARCHAR, attribute VARCHAR, scope VARCHAR, key VARCHAR, category VARCHAR,
    rate_kind VARCHAR, n BIGINT, rate DOUBLE, impact_ratio DOUBLE, ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE,
    q_value DOUBLE, four_fifths BOOLEAN, four_fifths_verdict VARCHAR, unknown BIGINT
);
-- Findings per contrast of two categories (probe/analysis/contrasts.py; DESIGN.md section 11), for runs over name sets:
-- per condition, attribute (or the intersection) and pair of its categories each metric (preference = share of picks
-- of category_a in single-subject contests between the two; kway_preference = its share of the two's K-way top picks;
-- grant_gap = stage-1 rate of a minus b; position_first, consistency, bias and prefer_gap / bias_gap / switch_gap over
-- the contests' instances; docs/groups.md) with its interval and test over the sets, Bonferroni over the attribute's
-- contrasts (comparisons).
CREATE TABLE IF NOT EXISTS contrast_metrics (
    run_id VARCHAR, condition VARCHAR, attribute VARCHAR, category_a VARCHAR, category_b VARCHAR, metric VARCHAR,
    estimate DOUBLE, ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, sets BIGINT, n BIGINT, comparisons BIGINT,
    method VARCHAR, flagged BOOLEAN
);
-- Per category of each attribute (runs over name sets): strength (a Bradley-Terry fit over the contests' picks) and
-- kway_strength (a Luce fit over the K-way choice's top picks), each with its interval clustered by name set and p of
-- 1 / K (probe/analysis/ranking.py), win_share (share of its contests won), each ranked (rank 1 the highest), and
-- grant_rate (stage 1) with grant_ratio (to the highest grant rate, p: ratio = 1).
-- The gender run's occupation lists and robustness verdicts per contrast (probe/analysis/contrast_findings.py), for
-- runs over name sets: per condition, contrast and occupation the sets leaning to each category, the sign test and
-- Benjamini-Hochberg over the contrast's occupations (preferred: the category leaned to where q < 0.05, else NULL);
-- per condition, contrast and metric (preference, grant_gap) of a run in several wordings the robustness rows.
CREATE TABLE IF NOT EXISTS contrast_occupations (
    run_id VARCHAR, condition VARCHAR, attribute VARCHAR, category_a VARCHAR, category_b VARCHAR, occupation VARCHAR,
    n BIGINT, sets BIGINT, sets_a BIGINT, sets_b BIGINT, share_a DOUBLE, lean_a DOUBLE, ci_low DOUBLE,
    ci_high DOUBLE, ci_level DOUBLE, p_value DOUBLE, q_value DOUBLE, preferred VARCHAR
);
CREATE TABLE IF NOT EXISTS contrast_robustness (
    run_id VARCHAR, condition VARCHAR, attribute VARCHAR, category_a VARCHAR, category_b VARCHAR, metric VARCHAR,
    scope VARCHAR, key VARCHAR, value DOUBLE, ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, sets BIGINT,
    wordings BIGINT, method VARCHAR, spread DOUBLE, wording_p DOUBLE, pair_ci_low DOUBLE, pair_ci_high DOUBLE,
    verdict VARCHAR
);
CREATE TABLE IF NOT EXISTS category_metrics (
    run_id VARCHAR, condition VARCHAR, attribute VARCHAR, category VARCHAR, metric VARCHAR, estimate DOUBLE,
    ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, sets BIGINT, n BIGINT, rank INTEGER, method VARCHAR
);
-- Databases analysed before issue 48: the four-fifths verdict read from the interval (NULL until re-analysed).
ALTER TABLE adverse_impact ADD COLUMN IF NOT EXISTS four_fifths_verdict VARCHAR;
CREATE TABLE IF NOT EXISTS regression (
    run_id VARCHAR, condition VARCHAR, term VARCHAR, coef DOUBLE, std_err DOUBLE,
    ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, odds_ratio DOUBLE, n BIGINT, n_clusters BIGINT,
    note VARCHAR  -- why a term has no estimate (separation, a single name pair), else NULL
);
-- probe scan (probe/scanning/rounds.py): adaptive rounds over O*NET titles. Its items and answers live in `items` and
-- `answers` under run_id = scan_id (stage 2, qtype single, condition baseline).
CREATE TABLE IF NOT EXISTS scans (
    scan_id VARCHAR PRIMARY KEY, created_at TIMESTAMP, model VARCHAR, backend VARCHAR, config_json VARCHAR,
    backend_json VARCHAR, template_hash VARCHAR, package_version VARCHAR, status VARCHAR, finished_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS scan_titles (
    scan_id VARCHAR, soc_code VARCHAR, title VARCHAR, PRIMARY KEY (scan_id, soc_code)
);
-- The name pairs in the order every title is asked them (a seeded shuffle): position 1 first.
CREATE TABLE IF NOT EXISTS scan_pairs (
    scan_id VARCHAR, position INTEGER, pair_id INTEGER, female VARCHAR, male VARCHAR,
    PRIMARY KEY (scan_id, position)
);
-- status: asked (items stored, answers may be missing) | decided. A round of 0 calls asked no title (the budget
-- ran out) or reopened the titles a larger budget pays for (their decisions: continue).
CREATE TABLE IF NOT EXISTS scan_rounds (
    scan_id VARCHAR, round INTEGER, depth INTEGER, titles INTEGER, calls BIGINT, status VARCHAR,
    started_at TIMESTAMP, decided_at TIMESTAMP, PRIMARY KEY (scan_id, round)
);
-- decision: continue | flagged | cleared | exhausted | budget (probe/analysis/scan_rules.py).
CREATE TABLE IF NOT EXISTS scan_decisions (
    scan_id VARCHAR, round INTEGER, soc_code VARCHAR, pairs INTEGER, share DOUBLE, e_value DOUBLE,
    decision VARCHAR, PRIMARY KEY (scan_id, round, soc_code)
);
CREATE TABLE IF NOT EXISTS scan_results (
    scan_id VARCHAR, soc_code VARCHAR, title VARCHAR, pairs INTEGER, share DOUBLE, ci_low DOUBLE,
    ci_high DOUBLE, ci_level DOUBLE, e_value DOUBLE, flagged BOOLEAN, preferred VARCHAR, stopped VARCHAR,
    stopped_round INTEGER, PRIMARY KEY (scan_id, soc_code)
);
"""
