"""The occupations gate (kinds/occupations.py) on a run over name sets: it reads the report's occupation lists per
contrast (table contrast_occupations: per condition, contrast and occupation, the sets leaning to each category, the
exact sign test, Benjamini-Hochberg over the contrast's occupations), every contrast of the gate's condition, each
its own family as in the report.

Fail: an occupation listed (preferred, q < 0.05) for any contrast; its fail p for the family's Holm step is the
smallest q times the contrasts with a tested occupation (Bonferroni over the contrasts' families). Otherwise, with
`detectable`: pass where, in every contrast, each occupation's sign test detects a lean of 0.5 + detectable of its
leaning sets one way with 80% power at the level Benjamini-Hochberg applies to a lone listed occupation of that
contrast (0.05 / its occupations with a leaning set); else inconclusive, with the name sets at which each would have
enough leaning sets. With `margin`: no share interval per occupation and contrast is stored, so it cannot pass:
inconclusive, saying to give `detectable`.
"""

from __future__ import annotations

import math
from typing import Any

import duckdb
import pandas as pd

from probe.analysis.binomial import SIGNIFICANCE, binomial_mde
from probe.common.errors import UserError
from probe.gates.gate import FAIL, INCONCLUSIVE, PASS, Gate, PairsNeeded, Verdict
from probe.gates.leaning import SIGN_TEST, first_names, leaning_pairs_for, leaning_plan

SETS = "name sets"
CONTRAST = ["attribute", "category_a", "category_b"]
MARGIN_NOTE = (
    "a run over name sets stores no share interval per occupation and contrast, so 'margin' cannot be shown: give "
    "'detectable' (the lean each occupation's sign test must be able to find)"
)


def set_verdict(con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate) -> Verdict:
    """The gate's verdict on a run over name sets (module docstring)."""
    rows = con.execute(  # the report's occupation lists (probe/analysis/contrast_findings.py)
        "SELECT attribute, category_a, category_b, occupation, sets, lean_a, ci_low, ci_high, ci_level, q_value, "
        "preferred FROM contrast_occupations WHERE run_id = ? AND condition = ? "
        "ORDER BY attribute, category_a, category_b, occupation",
        [run_id, gate.condition],
    ).df()
    if rows.empty:
        raise UserError(f"gate {gate.name!r}: run {run_id!r} has no occupation lists in condition {gate.condition}")
    listed = gate.settings["occupations"]
    missing = sorted(set(listed) - set(rows["occupation"]))
    if missing:
        raise UserError(f"gate {gate.name!r}: occupation {missing[0]!r} is not in run {run_id!r}")
    families = rows.groupby(CONTRAST, sort=False)
    tested_per_contrast = families["sets"].transform(lambda sets: int((sets > 0).sum()))
    rows = rows.assign(family=tested_per_contrast)
    if listed:
        rows = rows[rows["occupation"].isin(listed)]
    asked = int(con.execute("SELECT count(DISTINCT set_id) FROM run_contests WHERE run_id = ?", [run_id]).fetchone()[0])
    tested = rows.dropna(subset=["q_value"]).sort_values(["q_value", "attribute", "category_a", "occupation"])
    contrasts = int(tested.groupby(CONTRAST).ngroups)
    preferred = rows[rows["preferred"].notna()]
    details: dict[str, Any] = {
        "preferred": sorted(set(preferred["occupation"])),  # as on name pairs (a failing gate's JUnit items)
        "listed": [_listing(row) for row in preferred.to_dict("records")],
        "name_sets": asked,
        "contrasts": int(families.ngroups),
    }
    p_fail = min(1.0, float(tested["q_value"].min()) * contrasts) if not tested.empty else 1.0
    if not preferred.empty:
        return _listed(gate, rows, tested.iloc[0], details, p_fail)
    if gate.settings["margin"] is not None:
        said = f"no occupation listed in {_count(details['contrasts'])}; {MARGIN_NOTE}"
        summary = f"none listed in {_count(details['contrasts'])}; 'margin' needs name pairs: give 'detectable'"
        return _verdict(gate, INCONCLUSIVE, said, summary, details, p_fail, PairsNeeded(None, MARGIN_NOTE))
    return _detectable_in_each(gate, rows, asked, details, p_fail)


def _verdict(
    gate: Gate,
    outcome: str,
    sentence: str,
    summary: str,
    details: dict[str, Any],
    p_fail: float,
    needed: PairsNeeded,
    **numbers: Any,
) -> Verdict:
    """A verdict of the gate on name sets: the sign test's, its units counted as name sets."""
    return Verdict(
        gate,
        outcome,
        sentence,
        p_fail=p_fail,
        method=SIGN_TEST,
        needed=needed,
        details=details,
        summary=summary,
        unit=SETS,
        **numbers,
    )


def _count(contrasts: int) -> str:
    return f"{contrasts} contrast" + ("" if contrasts == 1 else "s")


def _label(row: dict[str, Any]) -> str:
    return f"{row['category_a']} vs {row['category_b']} ({row['attribute']})"


def _listing(row: dict[str, Any]) -> dict[str, Any]:
    """One listed occupation in gate.json: its contrast, the category it leans to and its q."""
    return {
        "contrast": _label(row),
        "occupation": row["occupation"],
        "preferred": row["preferred"],
        "q_value": float(row["q_value"]),
    }


def _listed(gate: Gate, rows: pd.DataFrame, most: pd.Series, details: dict[str, Any], p_fail: float) -> Verdict:
    """Fail: occupations listed for a contrast; the numbers are the most leaning one's (smallest q): the share of its
    leaning sets that lean to category_a, with the report's interval at the decision's level."""
    preferred = rows[rows["preferred"].notna()].to_dict("records")
    shown = [f"{row['occupation']} (to {row['preferred']}, {_label(row)})" for row in preferred]
    named = ", ".join(f"{row['occupation']} (to {row['preferred']}, q = {row['q_value']:.3g})" for row in preferred)
    contrasts = len({_label(row) for row in preferred})
    sentence = (
        f"{len(preferred)} occupations listed in {contrasts} of {_count(details['contrasts'])}: {named}; most "
        f"leaning: {most['occupation']} in {_label(most)}, {most['lean_a']:.3f} of its {int(most['sets'])} leaning "
        f"name sets lean to {most['category_a']} ({most['ci_level']:.1%} interval [{most['ci_low']:.3f}, "
        f"{most['ci_high']:.3f}]), q = {most['q_value']:.3g}; {details['name_sets']} name sets asked"
    )
    summary = (
        f"{len(preferred)} occupations listed in {contrasts} of {_count(details['contrasts'])} (sign test over "
        f"name sets, BH q < 0.05 per contrast): {first_names(shown)}"
    )
    needed = PairsNeeded(details["name_sets"])
    numbers = {"estimate": float(most["lean_a"]), "pairs": int(most["sets"])}
    return _verdict(gate, FAIL, sentence, summary, details, p_fail, needed, **numbers)


def _detectable_in_each(gate: Gate, rows: pd.DataFrame, asked: int, details: dict[str, Any], p_fail: float) -> Verdict:
    """Pass where, in every contrast, each occupation's sign test at Benjamini-Hochberg's level for a lone listed
    occupation of that contrast detects the stated lean with 80% power; else inconclusive with the sets at which the
    contrast's fewest leaning sets would reach it, with 80% chance."""
    detectable = gate.settings["detectable"]
    rows = rows.assign(level=SIGNIFICANCE / rows["family"].clip(lower=1))
    missing = rows[
        [
            (mde := binomial_mde(int(sets), level)) is None or mde > detectable
            for sets, level in zip(rows["sets"], rows["level"], strict=True)
        ]
    ]
    details["not_detectable"] = [f"{row['occupation']} ({_label(row)})" for row in missing.to_dict("records")]
    lean = f"a lean of {0.5 + detectable:.0%} of leaning sets one way"
    contrasts = _count(details["contrasts"])
    if missing.empty:
        sentence = (
            f"no occupation listed in {contrasts} (Benjamini-Hochberg per contrast, q < 0.05), and each "
            f"occupation of each would show {lean} with 80% power (sign test at 0.05 / the contrast's tested "
            "occupations, a lone listing)"
        )
        summary = f"none listed in {contrasts}; {lean} detectable in each"
        return _verdict(gate, PASS, sentence, summary, details, p_fail, PairsNeeded(asked))
    plans = [
        leaning_plan(int(group["sets"].min()), asked, leaning_pairs_for(detectable, group["level"].iloc[0]), SETS)
        for _, group in missing.groupby(CONTRAST)
    ]  # the binding contrast: one no count decides, else the one needing the most sets
    needed, shown = max(plans, key=lambda plan: math.inf if plan[0].pairs is None else plan[0].pairs)
    fewest = int(missing["sets"].min())
    sentence = (
        f"no occupation listed in {contrasts}, but {lean} is not detectable with 80% power (sign test at "
        f"0.05 / the contrast's tested occupations) for {len(missing)}: {', '.join(details['not_detectable'])} "
        f"(fewest leaning name sets: {fewest} of {asked}); {shown}"
    )
    summary = (
        f"none listed, but {lean} not detectable in {len(missing)} ({first_names(details['not_detectable'])}); {shown}"
    )
    return _verdict(gate, INCONCLUSIVE, sentence, summary, details, p_fail, needed)
