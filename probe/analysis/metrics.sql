-- Every metric of DESIGN.md section 5, as SQL. probe/analysis/metrics.py loads this file by query name and does
-- only the statistics (intervals over name pairs, tests, regression) in Python.
-- Each query starts with a line `-- name: <query>`; $run_id is the run being analysed. A comment
-- `/* metric_registry: <part> */` marks where a list of metrics goes: probe/analysis/metric_sql.py writes it from the
-- metric registry (probe/analysis/metric_registry.py), the one place a metric's flag or units are written.

-- name: instances
-- One row per instance (run, condition, pair_id, name_order, occupation, wording) of stage 2, with its four labels
-- (a missing item or answer counts as unknown) and the flags every metric is built from.
CREATE OR REPLACE TEMP TABLE metric_instances AS
WITH labelled AS (
    SELECT i.condition, i.pair_id, i.name_order, i.occupation, i.wording, i.qtype, i.subject,
           coalesce(a.label, 'unknown') AS label
    FROM items AS i
    LEFT JOIN answers AS a ON a.run_id = i.run_id AND a.item_id = i.item_id
    WHERE i.run_id = $run_id AND i.stage = 2 AND i.qtype IN ('binary', 'single', 'multiple')
),
pivoted AS (
    SELECT condition, pair_id, name_order, occupation, wording,
           coalesce(any_value(label) FILTER (WHERE qtype = 'binary' AND subject = 'female'), 'unknown') AS bf,
           coalesce(any_value(label) FILTER (WHERE qtype = 'binary' AND subject = 'male'), 'unknown') AS bm,
           coalesce(any_value(label) FILTER (WHERE qtype = 'single'), 'unknown') AS s,
           coalesce(any_value(label) FILTER (WHERE qtype = 'multiple'), 'unknown') AS m
    FROM labelled
    GROUP BY condition, pair_id, name_order, occupation, wording
)
SELECT *,
       bf IN ('yes', 'no') AND bm IN ('yes', 'no') AND s IN ('female', 'male')
           AND m IN ('female', 'male', 'both', 'neither') AS valid,
       CASE s WHEN 'female' THEN bf WHEN 'male' THEN bm END AS b_chosen,
       CASE s WHEN 'female' THEN bm WHEN 'male' THEN bf END AS b_other,
       (s = 'female' AND name_order = 'fm') OR (s = 'male' AND name_order = 'mf') AS chose_first
FROM pivoted;

-- name: scope_counts
-- Long table metric_scope_counts (condition, scope, key, pair_id, metric, hits, n): the scope's value =
-- sum(hits) / sum(n) over its rows, one row per name pair that has one (scope `pair`: the pair itself), so every
-- interval can take its variance from the spread between pairs. Scope `pair` rows are also what the overall
-- values are computed from. Stage 1 also has scope `category` (skill / knowledge / ability). Unordered: the
-- queries below read it in the order they need (a run of 1M answers has ~1.4M rows here).
CREATE OR REPLACE TEMP TABLE metric_scope_counts AS
WITH instance_flags AS (
    SELECT condition, pair_id, occupation,
           valid::INT AS n_valid,
           /* metric_registry: instance_flags */
    FROM metric_instances
),
unit_sums AS (
    SELECT condition, pair_id, occupation, count(*) AS n_instances, sum(n_valid) AS n_valid,
           /* metric_registry: unit_sums */
    FROM instance_flags
    GROUP BY condition, pair_id, occupation
),
unit_metrics AS (
    SELECT condition, pair_id, occupation, metric, hits,
           /* metric_registry: denominator */ AS n
    FROM (
        UNPIVOT unit_sums
        ON /* metric_registry: unpivoted */
        INTO NAME metric VALUE hits
    )
),
-- Metrics over units of two instances (order_consistency: (pair, occupation) with both name orders valid;
-- context_sensitivity: (pair, order, occupation) with S valid with and without the stage-1 attributes), each unit a
-- row, from the registry's `units` queries (appended to an empty start), summed per (condition, pair, occupation)
-- beside unit_metrics, which has one row each there already (grouping its 1.1M rows again cost 0.5 s at 1M answers).
stage2_cells AS (
    SELECT condition, pair_id, occupation, metric, hits::BIGINT AS hits, n::BIGINT AS n FROM unit_metrics
    UNION ALL
    SELECT condition, pair_id, occupation, metric, sum(hits)::BIGINT, sum(n)::BIGINT
    FROM (SELECT * FROM unit_metrics WHERE false/* metric_registry: unit_queries */)
    GROUP BY condition, pair_id, occupation, metric
),
stage2_scopes AS (
    SELECT condition, 'occupation' AS scope, coalesce(occupation, pair_id::VARCHAR) AS key, pair_id, metric, hits, n
    FROM stage2_cells
    UNION ALL
    SELECT condition, 'pair' AS scope, pair_id::VARCHAR AS key, pair_id, metric, sum(hits)::BIGINT, sum(n)::BIGINT
    FROM stage2_cells
    GROUP BY condition, pair_id, metric
),
attr_answers AS (
    SELECT i.condition, i.pair_id, i.subject, i.category, i.attribute,
           coalesce(a.label, 'unknown') AS label
    FROM items AS i
    LEFT JOIN answers AS a ON a.run_id = i.run_id AND a.item_id = i.item_id
    WHERE i.run_id = $run_id AND i.stage = 1 AND i.qtype = 'attr'
),
-- Each pair's answers per attribute counted once (yes, yes or no, asked), then per scope: an attribute's counts count
-- for every occupation whose top-k set (frozen in run_attributes) has it (joining the answers themselves made 1.9M
-- rows at 1M answers).
attr_counts AS (
    SELECT condition, pair_id, subject, category, attribute,
           count(*) FILTER (WHERE label = 'yes') AS yes,
           count(*) FILTER (WHERE label IN ('yes', 'no')) AS answered,
           count(*) AS asked
    FROM attr_answers
    GROUP BY condition, pair_id, subject, category, attribute
),
occupation_attr_counts AS (
    SELECT ra.occupation, attr_counts.*
    FROM attr_counts
    JOIN (SELECT DISTINCT occupation, category, element_name FROM run_attributes WHERE run_id = $run_id) AS ra
      ON ra.category = attr_counts.category AND ra.element_name = attr_counts.attribute
),
attr_scoped AS (
    SELECT condition, 'pair' AS scope, pair_id::VARCHAR AS key, pair_id, subject, yes, answered, asked
    FROM attr_counts
    UNION ALL
    SELECT condition, 'category' AS scope, category AS key, pair_id, subject, yes, answered, asked FROM attr_counts
    UNION ALL
    SELECT condition, 'occupation' AS scope, occupation AS key, pair_id, subject, yes, answered, asked
    FROM occupation_attr_counts
),
stage1_scopes AS (
    SELECT condition, scope, key, pair_id, 'attr_yes_' || left(subject, 1) AS metric,
           sum(yes)::BIGINT AS hits, sum(answered)::BIGINT AS n
    FROM attr_scoped
    WHERE subject IN ('female', 'male')
    GROUP BY condition, scope, key, pair_id, subject
    UNION ALL
    SELECT condition, scope, key, pair_id, 'unknown_rate' AS metric,
           sum(asked - answered)::BIGINT AS hits, sum(asked)::BIGINT AS n
    FROM attr_scoped
    GROUP BY condition, scope, key, pair_id
)
SELECT * FROM stage2_scopes
UNION ALL
SELECT * FROM stage1_scopes;

-- name: instance_units
-- Table instance_metrics, inserted by analyze() inside its transaction: per stage-2 instance every metric counted by
-- its flag, with hits and n (0 or 1), and per unit of two instances each metric counted over such units, keyed by
-- its first instance with the other's condition and name order; the metrics in $without not stored (a run over name
-- sets' slot metrics). A comparison restricted to the instances several runs share (probe/compare/summary.py) and
-- the held-out checks (probe/compare/heldout.py) sum these rows. Straight from metric_instances into the store
-- (millions of rows at 1M answers: through pandas they cost seconds, through a temp table first 0.8 s more).
INSERT INTO instance_metrics BY NAME
SELECT $run_id::VARCHAR AS run_id, *
FROM (
    SELECT condition, pair_id, occupation, wording, name_order, NULL::VARCHAR AS other_condition,
           NULL::VARCHAR AS other_name_order, metric, hits, /* metric_registry: stored_denominator */ AS n
    FROM (
        UNPIVOT (
            SELECT condition, pair_id, occupation, wording, name_order, valid::INT AS n_valid, 1 AS n_instances,
                   /* metric_registry: stored_flags */
            FROM metric_instances
        )
        ON /* metric_registry: stored_unpivoted */
        INTO NAME metric VALUE hits
    )/* metric_registry: stored_unit_queries */
)
WHERE NOT list_contains($without::VARCHAR[], metric);

-- name: pair_counts
-- The `pair` scope of metric_scope_counts: each pair's own value and what the overall values are computed from.
SELECT * FROM metric_scope_counts WHERE scope = 'pair'
ORDER BY condition, key, pair_id, metric;

-- name: pooled_scope_counts
-- The occupation and category scopes, one row per (condition, scope, key, metric) with its pairs' hits and n as
-- lists in pair order: the grouping done here, so the statistics loop over ~3,000 groups, not ~1.4M rows.
SELECT condition, scope, key, metric, list(hits ORDER BY pair_id) AS hits, list(n ORDER BY pair_id) AS n
FROM metric_scope_counts WHERE scope <> 'pair' AND key IS NOT NULL
GROUP BY condition, scope, key, metric
ORDER BY condition, scope, key, metric;

-- name: pooled_set_counts
-- A run over name sets' occupation and category scopes, as pooled_scope_counts with the set as the unit (as its
-- overall rows): each set's contests summed, the lists in set order.
SELECT condition, scope, key, metric, list(hits ORDER BY set_id) AS hits, list(n ORDER BY set_id) AS n
FROM (
    SELECT s.condition, s.scope, s.key, c.set_id, s.metric, sum(s.hits)::BIGINT AS hits, sum(s.n)::BIGINT AS n
    FROM metric_scope_counts AS s
    JOIN (SELECT DISTINCT pair_id, set_id FROM run_contests WHERE run_id = $run_id) AS c USING (pair_id)
    WHERE s.scope <> 'pair' AND s.key IS NOT NULL
    GROUP BY s.condition, s.scope, s.key, c.set_id, s.metric
)
GROUP BY condition, scope, key, metric
ORDER BY condition, scope, key, metric;

-- name: female_choice_cells
-- Valid instances per (condition, occupation, pair, name order): how many, and how many with S = female.
-- The occupation preference tests, the order-balanced female_share and the clustered regression are
-- computed from these cells.
SELECT condition, occupation, pair_id, name_order,
       count(*) FILTER (WHERE valid) AS n,
       /* metric_registry: female_count */
FROM metric_instances
GROUP BY condition, occupation, pair_id, name_order
ORDER BY condition, occupation, pair_id, name_order;

-- name: wording_cells
-- Counts per (condition, wording, pair, occupation, name order) for the robustness section (probe/analysis/
-- robustness.py) and the held-out checks (probe/compare/heldout.py): valid instances and how many pick the woman,
-- the first-named person, a subject the binary said yes to, the same in M.
SELECT condition, wording, pair_id, occupation, name_order,
       count(*) FILTER (WHERE valid) AS n,
       /* metric_registry: wording_counts */
FROM metric_instances
GROUP BY condition, wording, pair_id, occupation, name_order
ORDER BY condition, wording, pair_id, occupation, name_order;

-- name: wording_grants
-- Stage-1 yes and yes/no answers per (wording, pair, subject): the grant-rate difference per wording.
SELECT i.condition, i.wording, i.pair_id, i.subject,
       count(*) FILTER (WHERE a.label = 'yes') AS yes,
       count(*) FILTER (WHERE a.label IN ('yes', 'no')) AS n
FROM items AS i
LEFT JOIN answers AS a ON a.run_id = i.run_id AND a.item_id = i.item_id
WHERE i.run_id = $run_id AND i.stage = 1 AND i.qtype = 'attr'
GROUP BY i.condition, i.wording, i.pair_id, i.subject
ORDER BY i.wording, i.pair_id, i.subject;

-- name: contest_sides
-- Runs over name sets: per contest (pair_id) its set, attribute and the categories of its first person (slot female)
-- and its second (slot male). A part the contrast queries below include (`/* query: contest_sides */`), written once.
SELECT pair_id, set_id, attribute,
       any_value(category) FILTER (WHERE slot = 'female') AS first_category,
       any_value(category) FILTER (WHERE slot = 'male') AS second_category
FROM run_contests WHERE run_id = $run_id
GROUP BY pair_id, set_id, attribute;

-- name: contrast_instances
-- Runs over name sets: per (condition, attribute, set, contrast) the valid stage-2 instances of the contests between
-- two categories (metric_instances) and their flags, by the people's own categories (probe/analysis/contrasts.py's
-- position, consistency, bias and gaps per contrast): slot_a is the slot (first / second person, stored as female /
-- male) of category_a's person.
WITH sides AS (/* query: contest_sides */),
flagged AS (
    SELECT i.*, s.attribute, s.set_id, least(s.first_category, s.second_category) AS category_a,
           greatest(s.first_category, s.second_category) AS category_b,
           CASE WHEN s.first_category < s.second_category THEN 'female' ELSE 'male' END AS slot_a
    FROM metric_instances AS i JOIN sides AS s USING (pair_id)
    WHERE i.valid AND s.first_category <> s.second_category
)
SELECT condition, attribute, set_id, category_a, category_b, count(*) AS n,
       count(*) FILTER (WHERE chose_first) AS position_first,
       count(*) FILTER (WHERE b_chosen = 'yes') AS consistency,
       count(*) FILTER (WHERE s = m) AS bias,
       count(*) FILTER (WHERE s = slot_a AND m = slot_a) AS bias_a,
       count(*) FILTER (WHERE s <> slot_a AND m = s) AS bias_b,
       count(*) FILTER (WHERE bf = 'no' AND bm = 'no' AND s = slot_a) AS prefer_a,
       count(*) FILTER (WHERE bf = 'no' AND bm = 'no' AND s <> slot_a) AS prefer_b,
       count(*) FILTER (WHERE s = slot_a AND m IN ('female', 'male') AND m <> slot_a) AS switch_a2b,
       count(*) FILTER (WHERE s <> slot_a AND m = slot_a) AS switch_b2a
FROM flagged
GROUP BY ALL
ORDER BY ALL;

-- name: drop_instances
DROP TABLE IF EXISTS metric_scope_counts;
DROP TABLE IF EXISTS metric_instances;

-- name: workforce_shares
-- The run's occupations with their O*NET-SOC code and the workforce's % women in labour-statistics source $source
-- and race shares (NULL where it publishes none or the code has no workforce row): the workforce comparison
-- (probe/analysis/workforce.py).
SELECT DISTINCT a.occupation, a.soc_code, w.pct_women, w.pct_white, w.pct_black, w.pct_asian, w.pct_hispanic
FROM run_attributes a LEFT JOIN workforce w ON w.soc_code = a.soc_code AND w.source = $source
WHERE a.run_id = $run_id
ORDER BY a.occupation;

-- name: contrast_choice_cells
-- Runs over name sets: the cells per contrast of the workforce comparison (probe/analysis/workforce.py), the
-- occupation lists and the robustness verdicts (probe/analysis/contrast_findings.py), by the people's own categories
-- (run_contests), never by slot. Per (condition, attribute, category_a, category_b, occupation, set, name order,
-- wording) of the single-subject contests between the two categories: n = answers naming either person,
-- n_female = picks of category_a's person (the column names of female_choice_cells: category_a takes the woman's
-- place), name_order 'fm' where category_a's person is named first, 'mf' where second; pair_id = the set.
WITH sides AS (/* query: contest_sides */),
picks AS (
    SELECT i.condition, i.pair_id, i.occupation, i.name_order, i.wording, coalesce(a.label, 'unknown') AS label
    FROM items AS i
    LEFT JOIN answers AS a ON a.run_id = i.run_id AND a.item_id = i.item_id
    WHERE i.run_id = $run_id AND i.stage = 2 AND i.qtype = 'single'
)
SELECT p.condition, s.attribute,
       least(s.first_category, s.second_category) AS category_a,
       greatest(s.first_category, s.second_category) AS category_b,
       p.occupation, s.set_id AS pair_id,
       CASE WHEN (p.name_order = 'fm') = (s.first_category < s.second_category) THEN 'fm' ELSE 'mf' END AS name_order,
       p.wording,
       count(*) FILTER (WHERE p.label IN ('female', 'male')) AS n,
       count(*) FILTER (WHERE CASE p.label WHEN 'female' THEN s.first_category WHEN 'male' THEN s.second_category END
                              = least(s.first_category, s.second_category)) AS n_female
FROM picks AS p JOIN sides AS s USING (pair_id)
WHERE s.first_category <> s.second_category
GROUP BY ALL
ORDER BY ALL;

-- name: impact_counts
-- The adverse-impact table's counts (DESIGN.md section 11): per (condition, attribute, rate kind, scope, key, name
-- set, category) how many of the category's answers hit, how many were usable, how many were not. Each subject
-- (slot female / male of a pair) has a category per attribute: a run over name sets maps its contests' slots in
-- run_contests; a run over name pairs is a run over sets of two, attribute 'sex', category = the subject. Rate kinds:
-- selection = "yes" to the binary question about a subject of the category; contest = the category's person won the
-- single-subject question of a contest between two categories of the attribute (both contestants count the
-- answer); scoring = the binary answer's P(yes) (from its exact option scores) above the median P(yes) of every
-- scored binary answer of the condition and scope, only where the condition has scores; ranking = the category's
-- person was the top pick of the K-way choice over their set (probe/dataset/kway.py: pair_id = the set, the label
-- the name picked; every person of the set counts the answer).
WITH answered AS (
    SELECT i.condition, i.pair_id, i.occupation, i.qtype, i.subject,
           coalesce(a.label, 'unknown') AS label,
           CASE WHEN a.decided_by = 'score' AND a.scores_json IS NOT NULL THEN
               1 / (1 + exp(json_extract(a.scores_json, '$.no')::DOUBLE - json_extract(a.scores_json, '$.yes')::DOUBLE))
           END AS p_yes
    FROM items AS i
    LEFT JOIN answers AS a ON a.run_id = i.run_id AND a.item_id = i.item_id
    WHERE i.run_id = $run_id AND i.stage = 2 AND i.qtype IN ('binary', 'single')
),
slots AS (
    SELECT pair_id, set_id, slot, attribute, category FROM run_contests WHERE run_id = $run_id
    UNION ALL
    SELECT pair_id, pair_id AS set_id, slot.name AS slot, 'sex' AS attribute, slot.name AS category
    FROM (SELECT DISTINCT pair_id FROM answered) CROSS JOIN (VALUES ('female'), ('male')) AS slot(name)
    WHERE NOT EXISTS (SELECT 1 FROM run_contests WHERE run_id = $run_id)
),
ranked AS (
    SELECT i.condition, i.pair_id AS set_id, i.occupation, coalesce(a.label, 'unknown') AS label
    FROM items AS i
    LEFT JOIN answers AS a ON a.run_id = i.run_id AND a.item_id = i.item_id
    WHERE i.run_id = $run_id AND i.stage = 2 AND i.qtype = 'kway'
),
set_members AS (
    SELECT DISTINCT s.set_id, s.attribute, s.category, CASE s.slot WHEN 'female' THEN p.female ELSE p.male END AS name
    FROM run_contests AS s JOIN run_name_pairs AS p ON p.run_id = s.run_id AND p.pair_id = s.pair_id
    WHERE s.run_id = $run_id
),
contests AS (
    SELECT f.pair_id, f.set_id, f.attribute, f.category AS female_category, m.category AS male_category
    FROM slots AS f JOIN slots AS m USING (pair_id, attribute)
    WHERE f.slot = 'female' AND m.slot = 'male'
),
subject_answers AS (
    SELECT a.condition, s.set_id, a.occupation, s.attribute, s.category, 'selection' AS rate_kind,
           a.label = 'yes' AS hit, a.label IN ('yes', 'no') AS usable, NULL::DOUBLE AS p_yes
    FROM answered AS a JOIN slots AS s ON s.pair_id = a.pair_id AND s.slot = a.subject
    WHERE a.qtype = 'binary'
    UNION ALL
    SELECT a.condition, c.set_id, a.occupation, c.attribute,
           CASE slot.name WHEN 'female' THEN c.female_category ELSE c.male_category END AS category,
           'contest' AS rate_kind, a.label = slot.name AS hit, a.label IN ('female', 'male') AS usable,
           NULL::DOUBLE AS p_yes
    FROM answered AS a JOIN contests AS c ON c.pair_id = a.pair_id
    CROSS JOIN (VALUES ('female'), ('male')) AS slot(name)
    WHERE a.qtype = 'single' AND c.female_category <> c.male_category
    UNION ALL
    SELECT a.condition, s.set_id, a.occupation, s.attribute, s.category, 'scoring' AS rate_kind,
           NULL AS hit, a.p_yes IS NOT NULL AS usable, a.p_yes
    FROM answered AS a JOIN slots AS s ON s.pair_id = a.pair_id AND s.slot = a.subject
    WHERE a.qtype = 'binary' AND a.condition IN (SELECT condition FROM answered WHERE p_yes IS NOT NULL)
    UNION ALL
    SELECT r.condition, p.set_id, r.occupation, p.attribute, p.category, 'ranking' AS rate_kind,
           r.label = p.name AS hit, r.label <> 'unknown' AS usable, NULL::DOUBLE AS p_yes
    FROM ranked AS r JOIN set_members AS p ON p.set_id = r.set_id
),
-- Every rate kind but scoring counted per occupation once; the overall scope sums those counts (grouping every
-- answer a second time for it cost a second at 1M answers).
occupation_counts AS (
    SELECT condition, attribute, rate_kind, occupation, set_id, category,
           count(*) FILTER (WHERE usable AND hit) AS hits,
           count(*) FILTER (WHERE usable) AS n,
           count(*) FILTER (WHERE NOT usable) AS unknown
    FROM subject_answers WHERE rate_kind <> 'scoring'
    GROUP BY condition, attribute, rate_kind, occupation, set_id, category
),
-- scoring: above the median of its own scope, so each scope counts the answers themselves
scoped AS (
    SELECT *, 'overall' AS scope, 'all' AS key FROM subject_answers WHERE rate_kind = 'scoring'
    UNION ALL
    SELECT *, 'occupation' AS scope, occupation AS key FROM subject_answers WHERE rate_kind = 'scoring'
),
medians AS (
    SELECT condition, attribute, scope, key, median(p_yes) AS median_p_yes
    FROM scoped WHERE p_yes IS NOT NULL
    GROUP BY condition, attribute, scope, key
),
probed_counts AS (
    SELECT condition, attribute, rate_kind, 'occupation' AS scope, occupation AS key, set_id, category,
           NULL::VARCHAR AS name, hits, n, unknown
    FROM occupation_counts
    UNION ALL
    SELECT condition, attribute, rate_kind, 'overall', 'all', set_id, category, NULL, sum(hits)::BIGINT,
           sum(n)::BIGINT, sum(unknown)::BIGINT
    FROM occupation_counts
    GROUP BY condition, attribute, rate_kind, set_id, category
    UNION ALL
    SELECT s.condition, s.attribute, s.rate_kind, s.scope, s.key, s.set_id, s.category, NULL,
           count(*) FILTER (WHERE s.usable AND s.p_yes > m.median_p_yes),
           count(*) FILTER (WHERE s.usable),
           count(*) FILTER (WHERE NOT s.usable)
    FROM scoped AS s
    LEFT JOIN medians AS m USING (condition, attribute, scope, key)
    GROUP BY s.condition, s.attribute, s.rate_kind, s.scope, s.key, s.set_id, s.category
),
-- Imported decisions (probe/answering/decisions.py): condition 'decisions', scope overall and job, one row per set,
-- category and name (a name may recur across sets: probe/analysis/impact.py clusters by it too). selection =
-- selected (or ranked first); scoring = the score above the median score of the people in the scope (6 RCNY 5-300).
people AS (
    SELECT p.set_id, p.name, c.attribute, c.category, d.job, d.selected, d.score
    FROM run_decisions AS d
    JOIN run_people AS p ON p.run_id = d.run_id AND p.person_id = d.person_id
    JOIN run_person_categories AS c ON c.run_id = d.run_id AND c.person_id = d.person_id
    WHERE d.run_id = $run_id
),
people_scoped AS (
    SELECT *, 'overall' AS scope, 'all' AS key FROM people
    UNION ALL
    SELECT *, 'job' AS scope, job AS key FROM people WHERE job IS NOT NULL
),
score_medians AS (
    SELECT scope, key, median(d.score) AS median_score
    FROM (SELECT person_id, score, 'overall' AS scope, 'all' AS key FROM run_decisions WHERE run_id = $run_id
          UNION ALL
          SELECT person_id, score, 'job', job FROM run_decisions WHERE run_id = $run_id AND job IS NOT NULL) AS d
    WHERE d.score IS NOT NULL
    GROUP BY scope, key
),
decided AS (
    SELECT 'decisions' AS condition, attribute, 'selection' AS rate_kind, scope, key, set_id, category, name,
           selected IS TRUE AS hit, selected IS NOT NULL AS usable
    FROM people_scoped
    UNION ALL
    SELECT 'decisions', p.attribute, 'scoring', p.scope, p.key, p.set_id, p.category, p.name,
           p.score > m.median_score, p.score IS NOT NULL
    FROM people_scoped AS p JOIN score_medians AS m USING (scope, key)
),
decided_counts AS (
    SELECT condition, attribute, rate_kind, scope, key, set_id, category, name,
           count(*) FILTER (WHERE usable AND hit) AS hits,
           count(*) FILTER (WHERE usable) AS n,
           count(*) FILTER (WHERE NOT usable) AS unknown
    FROM decided
    GROUP BY condition, attribute, rate_kind, scope, key, set_id, category, name
)
SELECT * FROM probed_counts
UNION ALL
SELECT * FROM decided_counts
ORDER BY condition, attribute, rate_kind, scope, key, category, set_id, name;

-- name: contrast_counts
-- Runs over name sets (DESIGN.md section 11): per (condition, attribute, set, contrast) the single-subject answers of
-- the contests between two people of different categories of the attribute, read by the people's own categories
-- (run_contests), never by slot: category_a / category_b in alphabetical order, hits = picks of category_a's person,
-- n = answers naming either person, both name orders together.
WITH sides AS (/* query: contest_sides */),
picks AS (
    SELECT i.condition, i.pair_id, coalesce(a.label, 'unknown') AS label
    FROM items AS i
    LEFT JOIN answers AS a ON a.run_id = i.run_id AND a.item_id = i.item_id
    WHERE i.run_id = $run_id AND i.stage = 2 AND i.qtype = 'single'
)
SELECT p.condition, s.attribute, s.set_id,
       least(s.first_category, s.second_category) AS category_a,
       greatest(s.first_category, s.second_category) AS category_b,
       count(*) FILTER (WHERE CASE p.label WHEN 'female' THEN s.first_category WHEN 'male' THEN s.second_category END
                              = least(s.first_category, s.second_category)) AS hits,
       count(*) FILTER (WHERE p.label IN ('female', 'male')) AS n
FROM picks AS p JOIN sides AS s USING (pair_id)
WHERE s.first_category <> s.second_category
GROUP BY ALL
ORDER BY ALL;

-- name: contrast_wording_grants
-- Runs over name sets: stage-1 answers per (condition, wording, attribute, set, category) of the person asked about
-- (the subject's slot read through run_contests as that person's category): yes, yes or no, neither. The grant
-- gap's robustness verdict per contrast reads them by wording (probe/analysis/contrast_findings.py).
SELECT i.condition, i.wording, s.attribute, s.set_id, s.category,
       count(*) FILTER (WHERE a.label = 'yes') AS hits,
       count(*) FILTER (WHERE a.label IN ('yes', 'no')) AS n,
       count(*) FILTER (WHERE coalesce(a.label, 'unknown') NOT IN ('yes', 'no')) AS unknown
FROM items AS i
LEFT JOIN answers AS a ON a.run_id = i.run_id AND a.item_id = i.item_id
JOIN run_contests AS s ON s.run_id = i.run_id AND s.pair_id = i.pair_id AND s.slot = i.subject
WHERE i.run_id = $run_id AND i.stage = 1 AND i.qtype = 'attr'
GROUP BY ALL
ORDER BY ALL;

-- name: grant_counts
-- Runs over name sets: contrast_wording_grants summed over the wordings, per (condition, attribute, set, category).
SELECT condition, attribute, set_id, category,
       sum(hits)::BIGINT AS hits, sum(n)::BIGINT AS n, sum(unknown)::BIGINT AS unknown
FROM (/* query: contrast_wording_grants */)
GROUP BY ALL
ORDER BY ALL;
