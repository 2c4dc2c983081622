"""Comparing runs: shared instances, settings, agreement; the leaderboard, differences and ranks are in
leaderboard.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import pandas as pd

from probe.analysis.metric_registry import COMPARED_METRICS, FEMALE_SHARE
from probe.analysis.metrics import order_balanced_shares
from probe.analysis.statistics import OVERALL_METHOD
from probe.common.errors import UserError
from probe.common.vocabulary import DECISIONS_BACKEND, STAGE1_CONDITION
from probe.compare.agreement import preference_agreement
from probe.compare.contrasts import contrast_comparison, set_counts, sets_of
from probe.compare.leaderboard import (
    CONTRASTS,
    RANK_METHOD,
    RANK_ORDER,
    STAGE1_PARTS,
    leaderboard_rows,
    paired_analysis,
    rank_direction,
)
from probe.report.data import (
    CONDITIONS,
    SCHEMA_VERSION,
    clean,
    metrics_frame,
    order_index,
    overall_entries,
    preference_frame,
    preferred_lists,
    run_record,
    run_settings,
)
from probe.report.formatting import set_words
from probe.report.impact import compared_ratios


def shared_instances(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> pd.DataFrame:
    """Stage-2 instance keys (condition, pair_id, name_order, occupation, wording) that every run has items for."""
    placeholders = ", ".join("?" for _ in run_ids)
    return con.execute(
        f"""
        SELECT condition, pair_id, name_order, occupation, wording FROM items
        WHERE stage = 2 AND run_id IN ({placeholders})
        GROUP BY condition, pair_id, name_order, occupation, wording
        HAVING count(DISTINCT run_id) = ?
        ORDER BY condition, pair_id, name_order, occupation, wording
        """,
        [*run_ids, len(run_ids)],
    ).df()


def shared_pair_counts(con: duckdb.DuckDBPyConnection, run_id: str, shared: pd.DataFrame) -> pd.DataFrame:
    """Per-pair metric counts (hits, n) of a run restricted to the shared instances, and its stage-1 grant counts
    (attr_yes_f, attr_yes_m) of the shared pairs.

    A run whose every stage-2 instance is shared (the usual case: one design for every model) has them in its
    metrics table already (scope pair: value = hits / n), read in milliseconds; otherwise they are summed over the
    shared instances alone from the stored per-instance counts (`counts_on_instances`). The order-balanced
    female_share has no count of its own: its hits are value x n, so hits / n is the pair's value, as `probe gate`
    reads it.
    """
    own = con.execute(
        "SELECT count(*) FROM (SELECT DISTINCT condition, pair_id, name_order, occupation, wording FROM items "
        "WHERE run_id = ? AND stage = 2)",
        [run_id],
    ).fetchall()[0][0]  # every row fetched: the connection is free for counts_on_instances' view
    if own != len(shared):
        return counts_on_instances(con, run_id, shared)
    compared = (*COMPARED_METRICS, *STAGE1_PARTS)
    placeholders = ", ".join("?" for _ in compared)
    counts = con.execute(
        "SELECT condition, scope, key, metric, coalesce(CASE WHEN metric = ? THEN value * n "
        "ELSE round(value * n) END, 0) AS hits, n FROM metrics "
        f"WHERE run_id = ? AND scope = 'pair' AND metric IN ({placeholders})",
        [FEMALE_SHARE, run_id, *compared],
    ).df()
    return _compared(counts, shared)


def counts_on_instances(con: duckdb.DuckDBPyConnection, run_id: str, shared: pd.DataFrame) -> pd.DataFrame:
    """Per-pair metric counts of a run on the `shared` instances alone, summed from what analyze() stored per instance
    (instance_metrics: a unit of two instances counts where both are shared; female_share: each pair's mean over its
    name orders of the shared instances' share, as the analyzers' `order_balanced_shares` balances it)."""
    con.register("shared_instance_keys", shared)
    try:
        kept = con.execute(
            """
            SELECT u.condition, u.pair_id, u.occupation, u.name_order, u.metric, u.hits, u.n
            FROM instance_metrics AS u
            JOIN shared_instance_keys AS k
              ON k.condition = u.condition AND k.pair_id = u.pair_id AND k.name_order = u.name_order
             AND k.occupation = u.occupation AND k.wording = u.wording
            WHERE u.run_id = ? AND (u.other_condition IS NULL OR EXISTS (
                SELECT 1 FROM shared_instance_keys AS o
                WHERE o.condition = u.other_condition AND o.pair_id = u.pair_id AND o.name_order = u.other_name_order
                  AND o.occupation = u.occupation AND o.wording = u.wording))
            """,
            [run_id],
        ).df()
    finally:
        con.unregister("shared_instance_keys")
    female = kept["metric"] == FEMALE_SHARE
    counts = kept[~female].groupby(["condition", "pair_id", "metric"], as_index=False)[["hits", "n"]].sum()
    cells = kept[female].groupby(["condition", "occupation", "pair_id", "name_order"], as_index=False)[["hits", "n"]]
    cells = cells.sum().rename(columns={"hits": "n_female"})
    shares = [order_balanced_shares(group, ["pair_id"]) for _, group in cells.groupby("condition", sort=True)]
    female_rows = [
        pd.DataFrame(
            {
                "condition": condition,
                "pair_id": values.index,
                "metric": FEMALE_SHARE,
                "hits": values.fillna(0).to_numpy() * valid.to_numpy(),
                "n": valid.to_numpy(),
            }
        )
        for condition, (values, valid) in zip(sorted(set(cells["condition"])), shares, strict=True)
    ]
    stage2 = pd.concat([counts, *female_rows], ignore_index=True)
    stage2 = stage2.assign(scope="pair", key=stage2["pair_id"].astype(str))
    placeholders = ", ".join("?" for _ in STAGE1_PARTS)
    stage1 = con.execute(  # stage 1 is not restricted to shared instances: its pairs' stored counts
        "SELECT condition, scope, key, metric, coalesce(round(value * n), 0) AS hits, n FROM metrics "
        f"WHERE run_id = ? AND scope = 'pair' AND condition = ? AND metric IN ({placeholders})",
        [run_id, STAGE1_CONDITION, *STAGE1_PARTS],
    ).df()
    columns = ["condition", "scope", "key", "metric", "hits", "n"]
    return _compared(pd.concat([stage2[columns], stage1], ignore_index=True), shared)


def _compared(counts: pd.DataFrame, shared: pd.DataFrame) -> pd.DataFrame:
    """The rows compare pairs: the compared stage-2 metrics, and stage 1's grant counts of the shared pairs."""
    stage1 = counts["condition"] == STAGE1_CONDITION
    pairs = {str(pair) for pair in shared["pair_id"]}
    keep = (~stage1 & counts["metric"].isin(COMPARED_METRICS)) | (
        stage1 & counts["metric"].isin(STAGE1_PARTS) & counts["key"].isin(pairs)
    )
    return counts[keep].reset_index(drop=True)


def stage1_paired(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], shared: pd.DataFrame) -> bool:
    """Whether every run asked stage 1 the same attribute questions of the shared pairs (the grant gap is paired
    only then: runs of different occupations ask about different attributes)."""
    pairs = sorted({int(pair) for pair in shared["pair_id"]})
    if not pairs:
        return False
    placeholders = ", ".join("?" for _ in run_ids)
    pair_list = ", ".join("?" for _ in pairs)
    keys = "pair_id, name_order, subject, category, attribute, wording"
    total, everywhere = con.execute(
        f"""
        WITH asked AS (SELECT DISTINCT run_id, {keys} FROM items
                       WHERE stage = 1 AND run_id IN ({placeholders}) AND pair_id IN ({pair_list}))
        SELECT (SELECT count(*) FROM (SELECT DISTINCT {keys} FROM asked)),
               (SELECT count(*) FROM (SELECT {keys} FROM asked GROUP BY {keys} HAVING count(DISTINCT run_id) = ?))
        """,
        [*run_ids, *pairs, len(run_ids)],
    ).fetchone()
    return everywhere > 0 and total == everywhere


def _distinct(con: duckdb.DuckDBPyConnection, column: str, run_id: str) -> set:
    return {
        value
        for (value,) in con.execute(
            f"SELECT DISTINCT {column} FROM items WHERE run_id = ? AND stage = 2", [run_id]
        ).fetchall()
    }


# Run-card settings compared one by one: (key, noun, what a difference does to the comparison).
# "measured": the difference is what the comparison is about; "unpaired": the same instance was asked with
# other prompts or attributes, so instances cannot be paired and no paired difference is computed.
_RUN_SETTINGS = (
    ("model", "models", "measured"),
    ("model_identity", "model files (identity hash)", "measured"),
    ("backend", "backends", "measured"),
    ("decoding", "decoding settings", "measured"),
    ("system_prompt", "system prompts", "measured"),
    ("preset", "presets", "listed"),
    ("top_k", "top-k", "unpaired"),
    ("template_hash", "prompt templates (hash)", "unpaired"),
    ("onet_release", "O*NET releases", "unpaired"),
)
_EFFECTS = {
    "measured": "part of what this comparison measures",
    "listed": "the settings below say what that changes",
    "unpaired": "the same instance was asked with different prompts or attributes, so the comparison is "
    "unpaired: no paired differences are computed, each run's own values are shown side by side",
}


def settings_differences(
    con: duckdb.DuckDBPyConnection, runs: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every setting in which the runs differ, as {setting, values, effect, sentence}, and the reasons (if
    any) that make the comparison unpaired."""
    run_ids = [run["run_id"] for run in runs]
    differences = []
    for key, noun, effect in _RUN_SETTINGS:
        values = {run["run_id"]: run.get(key) for run in runs}
        if len({str(value) for value in values.values()}) > 1:
            missing = "none" if key == "system_prompt" else "unknown"
            listed = ", ".join(f"{run_id}: {missing if value is None else value}" for run_id, value in values.items())
            differences.append(
                {
                    "setting": key,
                    "values": values,
                    "effect": effect,
                    "sentence": f"The runs use different {noun} ({listed}); {_EFFECTS[effect]}.",
                }
            )
    contests = "contests" if any(run.get("name_sets") for run in runs) else "name pairs"  # a set's contests: pair_id
    for column, noun in (
        ("pair_id", contests),
        ("occupation", "occupations"),
        ("condition", "conditions"),
        ("wording", "wordings"),
    ):
        sets = {run_id: _distinct(con, column, run_id) for run_id in run_ids}
        if any(values != sets[run_ids[0]] for values in sets.values()):
            shared = set.intersection(*sets.values())
            sizes = ", ".join(f"{run_id}: {len(values)}" for run_id, values in sets.items())
            use = f"paired differences use only the {len(shared)} {noun} they share" if shared else "they share none"
            differences.append(
                {
                    "setting": column,
                    "values": {run_id: len(values) for run_id, values in sets.items()},
                    "effect": "restricted",
                    "sentence": f"The runs cover different {noun} ({sizes}); {use}.",
                }
            )
    unpaired = [d["sentence"] for d in differences if d["effect"] == "unpaired"]
    return differences, unpaired


MIXED_UNITS = (
    "The runs {sets} asked name sets and {pairs} name pairs: their contests and pairs are different people, so "
    "each run is shown on its own, side by side; no paired differences or ranks are computed."
)
NOTHING_SHARED = (
    "The runs {runs} share no stage-2 instance (no occupation, name pair, condition and wording in common): each "
    "run is shown on its own instances, side by side; no paired differences or ranks are computed."
)
STAGE1_UNPAIRED = (
    "The runs asked stage 1 about different attributes of the shared name pairs (their occupations differ): the "
    "stage-1 grant gap is shown for each run on its own, not as a paired difference."
)


def compare_run(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """A run's record and design, with its name sets (None for a run over name pairs), its answers and wall time."""
    settings = run_settings(con, run_id)
    sets, answers, seconds = con.execute(
        "SELECT (SELECT count(DISTINCT set_id) FROM run_contests WHERE run_id = $run_id), "
        "(SELECT count(*) FROM answers WHERE run_id = $run_id), "
        "(SELECT date_diff('millisecond', created_at, finished_at) / 1000 FROM runs WHERE run_id = $run_id)",
        {"run_id": run_id},
    ).fetchone()
    return {
        **run_record(con, run_id),
        "top_k": settings["top_k"],
        "pairs": settings["pairs"],  # contests, for a run over name sets
        "name_sets": sets or None,
        "answers": answers,
        "wall_seconds": clean(seconds),  # from the run's start to its finish (a resumed run: the pause included)
        "occupations": settings["occupations"],
        "conditions": settings["conditions"],
        "preset": settings["preset"],
        "system_prompt": settings["system_prompt"],  # what makes "model + mitigation prompt" a variant of its own
    }


def check_run_ids(run_ids: Sequence[str], reference: str | None) -> str:
    """Two or more distinct runs and a reference among them (default the first): the reference's id."""
    if len(run_ids) < 2:
        raise UserError("compare: give at least two run ids")
    if len(set(run_ids)) != len(run_ids):
        raise UserError(f"compare: run ids repeat ({', '.join(run_ids)})")
    if reference is not None and reference not in run_ids:
        raise UserError(f"--reference {reference!r}: not one of the compared runs ({', '.join(run_ids)})")
    return reference or run_ids[0]


def compare_summary(
    con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], reference: str | None = None
) -> dict[str, Any]:
    """compare.json: every number of a comparison; paired differences are each run minus `reference` (default:
    the first run)."""
    reference = check_run_ids(run_ids, reference)
    runs = [compare_run(con, run_id) for run_id in run_ids]
    over_sets = any(run["name_sets"] for run in runs)  # the unit of its differences and ranks: the set
    shared = shared_instances(con, run_ids)
    overall = {run_id: overall_entries(metrics_frame(con, run_id)) for run_id in run_ids}
    asked = {condition for run_id in run_ids for condition in _distinct(con, "condition", run_id)}
    conditions = sorted(asked, key=lambda c: order_index(CONDITIONS, c))
    in_common = [c for c in conditions if c in set(shared["condition"])]
    lead = (in_common or conditions or [STAGE1_CONDITION])[0]
    preferred = {run_id: preferred_lists(preference_frame(con, run_id)) for run_id in run_ids}
    differences, unpaired = settings_differences(con, runs)
    if len({bool(run["name_sets"]) for run in runs}) > 1:  # a contest's pair_id is no name pair: nothing to pair
        by_kind = {kind: [run["run_id"] for run in runs if bool(run["name_sets"]) == kind] for kind in (True, False)}
        unpaired.append(MIXED_UNITS.format(sets=", ".join(by_kind[True]), pairs=", ".join(by_kind[False])))
        values = {run["run_id"]: "name sets" if run["name_sets"] else "name pairs" for run in runs}
        differences.append({"setting": "names", "values": values, "effect": "unpaired", "sentence": unpaired[-1]})
    elif shared.empty:  # no occupation (or pair, condition, wording) in common: each run on its own instances
        unpaired.append(NOTHING_SHARED.format(runs=", ".join(run_ids)))
        differences.append(
            {
                "setting": "instances",
                "values": {run_id: None for run_id in run_ids},
                "effect": "unpaired",
                "sentence": unpaired[-1],
            }
        )
    counts = {} if unpaired else {run_id: shared_pair_counts(con, run_id, shared) for run_id in run_ids}
    has_stage1 = any((frame["condition"] == STAGE1_CONDITION).any() for frame in counts.values())
    if has_stage1 and not stage1_paired(con, run_ids, shared):
        counts = {run_id: frame[frame["condition"] != STAGE1_CONDITION] for run_id, frame in counts.items()}
        differences.append(
            {
                "setting": "attribute",
                "values": {run_id: None for run_id in run_ids},
                "effect": "restricted",
                "sentence": STAGE1_UNPAIRED,
            }
        )
    counts = {run_id: set_counts(con, run_id, frame) for run_id, frame in counts.items()} if over_sets else counts
    paired_differences, ranks = paired_analysis(counts, reference, over_sets) if counts else ([], [])
    return {
        "schema_version": SCHEMA_VERSION,
        "runs": runs,
        "differences_in_settings": [d["sentence"] for d in differences],
        "setting_differences": differences,
        "paired": not unpaired,
        "conditions": conditions,  # every condition any run asked: the side-by-side table's
        "paired_conditions": list(dict.fromkeys(row["condition"] for row in paired_differences)),
        "shared": {
            "pairs": int(shared["pair_id"].nunique()),
            "occupations": int(shared["occupation"].nunique()),
            "conditions": sorted(set(shared["condition"]), key=lambda c: order_index(CONDITIONS, c)),
            "instances": len(shared),
        }
        | ({"name_sets": sets_of(con, reference, shared["pair_id"])} if over_sets else {}),
        "reference": reference,
        # every run asked name pairs, a woman and a man: only then do the leaderboard's preferred counts name them
        "women_and_men": not over_sets and all(run["backend"] != DECISIONS_BACKEND for run in runs),
        "leaderboard": leaderboard_rows(runs, overall, preferred, lead),
        "leaderboard_method": set_words(OVERALL_METHOD) if over_sets else OVERALL_METHOD,  # the overall rows' own
        "overall": overall,
        "paired_differences": paired_differences,
        "ranks": ranks,
        "rank_order": RANK_ORDER,
        "rank_by": {metric: rank_direction(metric) for metric in (*COMPARED_METRICS, *CONTRASTS)},
        "rank_method": set_words(RANK_METHOD) if over_sets else RANK_METHOD,
        "preference_agreement": [
            row
            for index, run_a in enumerate(run_ids)
            for run_b in run_ids[index + 1 :]
            for row in preference_agreement(con, run_a, run_b)
        ],
        "adverse_impact": compared_ratios(con, list(run_ids)),  # each run's overall impact ratios (report.json's)
        "per_contrast": contrast_comparison(con, run_ids, reference),  # runs over name sets, paired by set
    }
