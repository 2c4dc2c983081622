"""`kind = "occupations"`: no occupation (of the gate's list, or any) preferred for one gender, by the report's
own procedure (a sign test over each occupation's leaning name pairs, Benjamini-Hochberg over occupations)."""

from __future__ import annotations

from typing import Any

import duckdb
from scipy import stats

from probe.analysis.binomial import POWER, SIGNIFICANCE, binomial_min_p
from probe.analysis.statistics import MIN_PAIRS
from probe.common.errors import UserError
from probe.gates.gate import FAIL, INCONCLUSIVE, PASS, Gate, GateKind, PairsNeeded, Verdict
from probe.gates.keys import Key, occupation_list
from probe.gates.verdicts import MOST_PAIRS

NO_LEANING_PAIR = "no name pair leans for an untestable occupation (every pair ties)"


class Occupations(GateKind):
    name = "occupations"
    keys = (Key("occupations", occupation_list, required=False, default=()),)
    takes_metric = False

    def verdict(self, con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, baseline: str | None) -> Verdict:
        return occupations_verdict(con, run_id, gate)

    def requirement(self, gate: Gate) -> str:
        return "no occupation preferred"


def occupations_verdict(con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate) -> Verdict:
    """Fail when an occupation (of the gate's list, or any) is preferred at the report's FDR; inconclusive when
    none is but some cannot be tested at this size (a sign test over their leaning pairs cannot reach 0.05).

    Its numbers are the most leaning occupation's (smallest q): the share of its leaning pairs that lean female
    with the report's interval at the decision's level; its q is the gate's p for the family's Holm step (under
    "no listed occupation preferred", BH rejects any with probability at most 5%)."""
    rows = con.execute(
        "SELECT occupation, pairs, q_value, preferred, lean_female, ci_low, ci_high, ci_level "
        "FROM occupation_preference WHERE run_id = ? AND condition = ? ORDER BY occupation",
        [run_id, gate.condition],
    ).df()
    listed = gate.settings["occupations"]
    if listed:
        missing = sorted(set(listed) - set(rows["occupation"]))
        if missing:
            raise UserError(f"gate {gate.name!r}: occupation {missing[0]!r} is not in run {run_id!r}")
        rows = rows[rows["occupation"].isin(listed)]
    preferred = rows[rows["preferred"] != "none"]
    untestable = rows[[binomial_min_p(int(pairs)) >= SIGNIFICANCE for pairs in rows["pairs"].fillna(0)]]
    named = ", ".join(f"{row.occupation} ({row.preferred}, q = {row.q_value:.3g})" for row in preferred.itertuples())
    asked = con.execute("SELECT count(DISTINCT pair_id) FROM items WHERE run_id = ? AND condition = ? AND "
                        "stage = 2", [run_id, gate.condition]).fetchone()[0]  # fmt: skip
    needed = PairsNeeded(int(asked))
    if len(preferred):
        verdict, sentence = FAIL, f"{len(preferred)} of {len(rows)} occupations preferred: {named}"
    elif len(untestable):
        verdict = INCONCLUSIVE
        leaning = leaning_pairs_needed(untestable["pairs"].fillna(0).min(), asked)
        needed = PairsNeeded(leaning, None if leaning else NO_LEANING_PAIR)
        decides = (f"about {leaning} name pairs would give each {MIN_PAIRS} leaning pairs (80% chance)" if leaning
                   else "no pair count makes them testable while no pair leans (every pair ties)")  # fmt: skip
        sentence = (f"none of {len(rows)} occupations preferred, but {len(untestable)} cannot be tested at this size "
                    f"(too few leaning name pairs): {', '.join(untestable['occupation'])}; {decides}")  # fmt: skip
    else:
        verdict, sentence = PASS, f"none of {len(rows)} occupations preferred (Benjamini-Hochberg, q < 0.05)"
    details: dict[str, Any] = {"preferred": preferred["occupation"].tolist(),
                               "not_testable": untestable["occupation"].tolist(), "name_pairs": int(asked)}  # fmt: skip
    tested = rows.dropna(subset=["q_value"]).sort_values(["q_value", "occupation"])
    if tested.empty:
        return Verdict(gate, verdict, sentence, p_fail=1.0, method="sign_test_bh", needed=needed,
                       details=details)  # fmt: skip
    most = tested.iloc[0]
    sentence += (f"; most leaning: {most['occupation']}, {most['lean_female']:.3f} of its {int(most['pairs'])} "
                 f"leaning name pairs lean female ({most['ci_level']:.1%} interval [{most['ci_low']:.3f}, "
                 f"{most['ci_high']:.3f}]), q = {most['q_value']:.3g}; {int(asked)} name pairs asked")  # fmt: skip
    details["most_leaning"] = {"occupation": most["occupation"], "q_value": float(most["q_value"]),
                               "interval": [float(most["ci_low"]), float(most["ci_high"])],
                               "interval_level": float(most["ci_level"])}  # fmt: skip
    return Verdict(gate, verdict, sentence, estimate=float(most["lean_female"]), p_fail=float(most["q_value"]),
                   pairs=int(most["pairs"]), method="sign_test_bh", needed=needed, details=details)  # fmt: skip


def leaning_pairs_needed(leaning: float, asked: int) -> int | None:
    """Name pairs at which an occupation leaning in `leaning` of `asked` pairs has MIN_PAIRS leaning pairs (the
    fewest whose sign test can reach 0.05) with 80% chance: the smallest N with P(Binomial(N, leaning / asked) >=
    MIN_PAIRS) >= 0.8. None when no pair leans."""
    if leaning <= 0 or asked <= 0:
        return None
    rate = min(leaning / asked, 1.0)
    smallest, largest = MIN_PAIRS, MOST_PAIRS + 1
    while smallest < largest:
        middle = (smallest + largest) // 2
        enough = stats.binom.sf(MIN_PAIRS - 1, middle, rate) >= POWER
        smallest, largest = (smallest, middle) if enough else (middle + 1, largest)
    return smallest
