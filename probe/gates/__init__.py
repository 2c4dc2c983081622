"""Release gates (`probe gate`): a bias policy a CI pipeline acts on, with pass, fail and inconclusive as three
honest outcomes (DESIGN.md section 8).

Enters: an analysed run (metrics, occupation_preference), a policy (policy.py), optionally a baseline run asked
the same questions.
Leaves: verdicts from the report's own inference (verdicts.py, kinds/), gate.json, gate.md and JUnit XML
(outputs.py), and the exit code (gate.EXIT_CODES): 0 every gate passes, 1 a gate fails, 4 a gate fails on its own
but the policy's family-wise control (gate_family = "holm") does not confirm it, 3 inconclusive and none of those
(4 and 3 are 1 with strict).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from probe.analysis.contrasts import over_name_sets
from probe.analysis.metric_registry import ATTR_YES_DIFF, ATTR_YES_F, ATTR_YES_M
from probe.common.errors import UserError
from probe.common.resources import resource_dir
from probe.compare.summary import compare_run, settings_differences
from probe.gates.gate import EXIT_CODES, FAIL, PASS, UNCONFIRMED, Gate, Verdict
from probe.gates.outputs import gate_document, write_outputs
from probe.gates.policy import Policy, load_policy, parse_policy
from probe.gates.verdicts import MOST_PAIRS, evaluate, overall, pair_terms

__all__ = ["Gate", "GateResult", "Policy", "check_gates", "load_policy", "parse_policy", "plan", "run_for"]
ITEMS_BEHIND = 8  # items listed in a failing gate's JUnit body, beside every pair's value


@dataclass(frozen=True)
class GateResult:
    """The outcome of `probe gate`: every verdict, the gate.json document and the files written."""

    run_id: str
    baseline: str | None
    outcome: str
    verdicts: list[Verdict]
    document: dict[str, Any]
    files: list[Path]

    def exit_code(self, strict: bool = False) -> int:
        """0 pass, 1 fail, 4 unconfirmed fail, 3 inconclusive (1 when `strict`: any gate not passed fails the job)."""
        return EXIT_CODES[FAIL] if strict and self.outcome != PASS else EXIT_CODES[self.outcome]


def check_baseline(con: duckdb.DuckDBPyConnection, run_id: str, baseline: str | None, gates: list[Gate]) -> None:
    """A baseline gate needs a baseline run that asked the same questions of the same name pairs."""
    if baseline is None:
        needing = next((gate for gate in gates if gate.needs_baseline), None)
        if needing is not None:
            raise UserError(f"gate {needing.name!r} ({needing.kind.name}) needs --baseline RUN_ID")
        return
    if baseline == run_id:  # a run against itself passes every non-inferiority gate by construction
        raise UserError(f"--baseline {baseline}: that is the run being gated; give the run it must not be worse than")
    differences, _ = settings_differences(con, [compare_run(con, run_id), compare_run(con, baseline)])
    apart = [d for d in differences if d["effect"] in ("unpaired", "restricted")]
    if apart:
        listed = "; ".join(
            f"{d['setting']} ({', '.join(f'{run}: {value}' for run, value in d['values'].items())})" for d in apart
        )
        raise UserError(f"baseline {baseline!r} is not paired with run {run_id!r}: they differ in {listed}")


def check_measured(con: duckdb.DuckDBPyConnection, run_id: str, baseline: str | None, gates: list[Gate]) -> None:
    """Each gate's condition was asked in the run (and its baseline), and its metric is measured there: a gate on
    what a run never asked is a policy mistake (exit 2), not an inconclusive verdict."""
    for gate in gates:
        for run in (run_id, baseline) if gate.needs_baseline else (run_id,):
            # a probed run's conditions are its items'; an imported decisions run has only its adverse-impact rows
            asked = con.execute(
                "SELECT condition FROM items WHERE run_id = ? UNION SELECT condition FROM "
                "adverse_impact WHERE run_id = ? ORDER BY condition",
                [run, run],
            )
            conditions = [row[0] for row in asked.fetchall()]
            if gate.condition not in conditions:
                raise UserError(
                    f"gate {gate.name!r}: key 'condition': run {run!r} has no condition "
                    f"{gate.condition!r} (its conditions: {', '.join(conditions) or 'none'})"
                )
            metrics = (ATTR_YES_F, ATTR_YES_M) if gate.metric == ATTR_YES_DIFF else (gate.metric,)
            for metric in metrics if gate.metric is not None else ():
                measured = con.execute(
                    "SELECT count(*) FROM metrics WHERE run_id = ? AND scope = 'pair' AND condition = ? AND metric = ?",
                    [run, gate.condition, metric],
                )
                if not measured.fetchone()[0]:
                    raise UserError(
                        f"gate {gate.name!r}: key 'metric': run {run!r} has no {metric} for condition "
                        f"{gate.condition!r}"
                    )


def check_gates(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    policy: Policy,
    baseline: str | None,
    folder: Path,
    junit: Path | None = None,
) -> GateResult:
    """Every gate's verdict, written as gate.json and gate.md in `folder` (and JUnit XML where asked)."""
    check_baseline(con, run_id, baseline, policy.gates)
    check_measured(con, run_id, baseline, policy.gates)
    verdicts = evaluate(con, run_id, policy.gates, baseline, policy.family)
    outcome = overall(verdicts)
    document = gate_document(run_id, baseline, outcome, verdicts, policy.family)
    behind = {
        verdict.gate.name: items_behind(con, run_id, verdict)
        for verdict in verdicts
        if verdict.verdict in (FAIL, UNCONFIRMED)
    }
    files = write_outputs(document, folder, junit, behind)
    return GateResult(run_id, baseline, outcome, verdicts, document, files)


def plan(con: duckdb.DuckDBPyConnection, run_id: str, policy: Policy, baseline: str | None) -> list[dict[str, Any]]:
    """From a pilot run: the name pairs each gate needs to be decided with 80% power, if the truth is the pilot's
    estimate and the spread between pairs stays as the pilot showed: the figure its verdict states (evaluate: the
    kind's `verdict`, fails held to the family's Holm level where the policy asks for it)."""
    check_baseline(con, run_id, baseline, policy.gates)
    check_measured(con, run_id, baseline, policy.gates)
    return [
        {
            "gate": verdict.gate.name,
            "pilot_pairs": verdict.details.get("name_pairs", verdict.pairs),
            "estimate": verdict.estimate,
            "pairs_needed": verdict.needed.pairs,
            "note": verdict.needed.note,
            "unit": verdict.unit or verdict.gate.kind.unit,
        }
        for verdict in evaluate(con, run_id, policy.gates, baseline, policy.family)
    ]


def run_for(pairs: int, unit: str = "name pairs") -> str | None:
    """The `probe run` that asks `pairs` name pairs (or, with `unit` "name sets", that many sets), from what ships:
    the shipped list (taxonomy/name_pairs.csv; taxonomy/name_sets.csv) takes --pairs; beyond it a names CSV
    (taxonomy/heldout_name_pairs.csv holds as many more pairs, disjoint). None past MOST_PAIRS."""
    if pairs > MOST_PAIRS:
        return None
    folder = resource_dir("taxonomy")
    if unit == "name sets":
        shipped = pd.read_csv(folder / "name_sets.csv")["set_id"].nunique()
        if pairs <= shipped:
            return f"probe run --names taxonomy/name_sets.csv --pairs {pairs} ..."
        return f"probe run --names FILE.csv ... with {pairs} name sets of your own ({shipped} ship)"
    shipped, heldout = (len(pd.read_csv(folder / name)) for name in ("name_pairs.csv", "heldout_name_pairs.csv"))
    if pairs <= shipped:
        return f"probe run --pairs {pairs} ..."
    if pairs <= shipped + heldout:
        return (
            f"probe run --names FILE.csv ... with {pairs} name pairs: {shipped} ship as the default list, "
            f"taxonomy/heldout_name_pairs.csv holds {heldout} more (disjoint; one CSV of both, pair_id "
            f"renumbered, has {shipped + heldout})"
        )
    return f"probe run --names FILE.csv ... with {pairs} name pairs of your own ({shipped + heldout} ship in two lists)"


def set_values(con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate) -> list[str]:
    """A run over name sets' lines of a failing gate's JUnit body: each set's value of the metric as the gate reads
    it (its contests summed), with its people."""
    numerators, denominators, sizes, sets = pair_terms(con, run_id, gate.condition, gate.metric)
    people = con.execute(
        "SELECT set_id::VARCHAR, string_agg(name, '/' ORDER BY person_id) FROM run_people WHERE run_id = ? "
        "GROUP BY set_id",
        [run_id],
    ).fetchall()
    names = dict(people)
    rows = zip(sets, numerators, denominators, sizes, strict=True)
    return ["name set | value | instances"] + [
        f"{key} {names.get(key, '')} | {hits / n:.3f} | {int(size)}" for key, hits, n, size in rows if n > 0
    ]


def items_behind(con: duckdb.DuckDBPyConnection, run_id: str, verdict: Verdict) -> str:
    """A failing gate's JUnit body: every name pair's value of the metric (a run over name sets: every set's), then
    the first items asked."""
    gate = verdict.gate
    lines = [verdict.sentence, ""]
    over_sets = over_name_sets(con, run_id)
    if gate.metric is not None and over_sets:
        lines += set_values(con, run_id, gate)
    elif gate.metric is not None:
        metrics = (ATTR_YES_F, ATTR_YES_M) if gate.metric == ATTR_YES_DIFF else (gate.metric, gate.metric)
        rows = con.execute(
            "SELECT m.key, p.female, p.male, m.value, m.n FROM metrics m LEFT JOIN name_pairs p "
            "ON p.pair_id = try_cast(m.key AS INTEGER) WHERE m.run_id = ? AND m.scope = 'pair' "
            "AND m.condition = ? AND m.metric IN (?, ?) ORDER BY try_cast(m.key AS INTEGER), m.metric",
            [run_id, gate.condition, *metrics],
        ).fetchall()
        lines.append("name pair | value | instances")
        lines += [
            f"{key} {female}/{male} | {value:.3f} | {n}" for key, female, male, value, n in rows if value is not None
        ]
    occupations = verdict.details.get("preferred") or None
    items = con.execute(
        "SELECT i.occupation, i.pair_id, i.name_order, i.qtype, a.label, i.prompt FROM items i "
        "LEFT JOIN answers a USING (run_id, item_id) WHERE i.run_id = ? AND i.condition = ? "
        "AND (? IS NULL OR list_contains(?, i.occupation)) ORDER BY i.seq LIMIT ?",
        [run_id, gate.condition, occupations, occupations, ITEMS_BEHIND],
    ).fetchall()
    lines += ["", f"first {len(items)} items ({gate.condition}):"]
    lines += [
        f"- {occupation or '-'} {'contest' if over_sets else 'pair'} {pair} {order} {qtype}: {label}\n  {prompt}"
        for occupation, pair, order, qtype, label, prompt in items
    ]
    return "\n".join(lines)
