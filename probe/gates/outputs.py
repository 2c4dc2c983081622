"""What CI systems read from a gate run: gate.json, JUnit XML (one testcase per gate) and a Markdown summary
for a job summary or a pull-request comment. All three are written from the same verdicts."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

from probe.analysis.statistics import METHODS
from probe.common.escape import markdown_text, strict_json, write_atomic
from probe.gates.gate import FAIL, INCONCLUSIVE, PASS, UNCONFIRMED, Verdict

SCHEMA_VERSION = 1
SETTINGS = ("target", "margin", "limit", "worse")  # in every gate's entry, null where its kind takes none
_MARKS = {PASS: "pass", FAIL: "**FAIL**", UNCONFIRMED: "fails alone (unconfirmed)", INCONCLUSIVE: "inconclusive"}


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), 6)


def verdict_record(verdict: Verdict) -> dict[str, Any]:
    """One gate in gate.json: the policy entry, the verdict and every number it rests on."""
    gate = verdict.gate
    interval = {
        name: None if bounds is None else [_number(bounds[0]), _number(bounds[1])]
        for name, bounds in (("ci90", verdict.ci90), ("ci95", verdict.ci95))
    }
    settings = {**dict.fromkeys(SETTINGS), "occupations": (), **gate.settings}
    return {
        "name": gate.name,
        "kind": gate.kind.name,
        "metric": gate.metric,
        "condition": gate.condition,
        **{key: list(value) if isinstance(value, tuple) else value for key, value in settings.items()},
        "verdict": verdict.verdict,
        "sentence": verdict.sentence,
        "estimate": _number(verdict.estimate),
        **interval,
        "passing_band": None if verdict.band is None else [_number(bound) for bound in verdict.band],
        "p_fail": _number(verdict.p_fail),
        "p_fail_holm": _number(verdict.p_fail_holm),
        "n": {"pairs": verdict.pairs, "instances": verdict.instances},
        "unit": verdict.unit or gate.kind.unit,
        "method": verdict.method,
        "pairs_needed": verdict.pairs_needed,
        "details": verdict.details,
    }


FAMILY = {
    None: "The release passes when every gate passes (intersection-union: no adjustment); each gate is decided on "
    "its own, and a gate that fails its own test fails the release (each interval gate fails a metric inside its "
    "margin in at most 2.5% of runs, so several gates together fail such a release more often; gate_family = "
    '"holm" bounds that at 5%)',
    "holm": "The release passes when every gate passes (intersection-union: no adjustment); a fail is confirmed by "
    'Holm\'s step-down over all gates (gate_family = "holm"; an occupations gate enters with its smallest q), so '
    "failing a gate whose metric is inside its margin happens in at most 5% of runs; a gate that fails on its own "
    'but not after Holm is "unconfirmed" (exit 4)',
}


def gate_document(
    run_id: str, baseline: str | None, outcome: str, verdicts: list[Verdict], family: str | None = None
) -> dict[str, Any]:
    """gate.json: the run, the overall outcome and how the family of gates is controlled."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "baseline": baseline,
        "outcome": outcome,
        "gate_family": family,
        "family": FAMILY[family],
        "methods": {
            verdict.method: {**METHODS, **verdict.gate.kind.methods}[verdict.method]
            for verdict in verdicts
            if verdict.method
        },
        "gates": [verdict_record(verdict) for verdict in verdicts],
    }


def junit_xml(document: dict[str, Any], behind: dict[str, str]) -> str:
    """JUnit XML: a testsuite of one testcase per gate; a failing gate carries a <failure> whose body lists what
    lies behind it (`behind`, per gate name; an unconfirmed one too, typed apart), an inconclusive one a <skipped>
    with its numbers."""
    gates = document["gates"]
    suite = ElementTree.Element(
        "testsuite",
        name=f"probe gate {document['run_id']}",
        tests=str(len(gates)),
        failures=str(sum(gate["verdict"] in (FAIL, UNCONFIRMED) for gate in gates)),
        errors="0",
        skipped=str(sum(gate["verdict"] == INCONCLUSIVE for gate in gates)),
        time="0",
    )
    for gate in gates:
        case = ElementTree.SubElement(
            suite, "testcase", name=gate["name"], classname=f"probe.gate.{gate['kind']}", time="0"
        )
        if gate["verdict"] in (FAIL, UNCONFIRMED):
            kind = "GateFailed" if gate["verdict"] == FAIL else "GateFailedUnconfirmed"
            failure = ElementTree.SubElement(case, "failure", message=gate["sentence"], type=kind)
            failure.text = behind.get(gate["name"], "")
        elif gate["verdict"] == INCONCLUSIVE:
            ElementTree.SubElement(case, "skipped", message=f"inconclusive: {gate['sentence']}")
    # <testsuites> takes no `skipped` in the common schema (Jenkins' junit-10.xsd): the count sits on the suite
    root = ElementTree.Element(
        "testsuites", name="probe gate", tests=suite.get("tests"), failures=suite.get("failures"), errors="0", time="0"
    )
    root.append(suite)
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def markdown_summary(document: dict[str, Any]) -> str:
    """A table a CI job summary or a pull-request comment shows: one row per gate, then each gate's sentence."""
    baseline = f" against baseline {markdown_text(document['baseline'])}" if document["baseline"] else ""
    units = sorted({gate["unit"] for gate in document["gates"]})
    mixed = len(units) > 1  # the heading names the count's unit; mixed units: each cell names its own
    heading = "Name pairs or sets" if mixed else (units or ["name pairs"])[0].capitalize()
    lines = [
        f"## Bias gates for run {markdown_text(document['run_id'])}{baseline}: {document['outcome']}",
        "",
        f"| Gate | Metric | Verdict | Estimate | 90% CI | 95% CI | Passing values | {heading} |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for gate in document["gates"]:
        count = f"{gate['n']['pairs']} {gate['unit']}" if mixed else gate["n"]["pairs"]
        lines.append(
            f"| {markdown_text(gate['name'])} | {gate['metric'] or gate['kind']} ({gate['condition']}) | "
            f"{_MARKS[gate['verdict']]} | {_fmt(gate['estimate'])} | {_fmt_interval(gate['ci90'])} | "
            f"{_fmt_interval(gate['ci95'])} | {_fmt_band(gate['passing_band'])} | {count} |"
        )
    lines += [
        "",
        *[f"- **{markdown_text(gate['name'])}**: {markdown_text(gate['sentence'])}" for gate in document["gates"]],
        "",
        document["family"] + ".",
    ]
    return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _fmt_interval(bounds: list[float] | None) -> str:
    return "-" if not bounds else f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _fmt_band(bounds: list[float | None] | None) -> str:
    """The passing values: a band, or a one-sided bound in words (gate.json keeps the open side as null)."""
    if not bounds:
        return "-"
    if bounds[0] is None:
        return f"at most {bounds[1]:.3f}"
    return f"at least {bounds[0]:.3f}" if bounds[1] is None else _fmt_interval(bounds)


def write_outputs(document: dict[str, Any], folder: Path, junit: Path | None, behind: dict[str, str]) -> list[Path]:
    """gate.json and gate.md in `folder`, and the JUnit file where asked for; returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "gate.json", folder / "gate.md"]
    write_atomic(written[0], strict_json(document, indent=2) + "\n")
    write_atomic(written[1], markdown_summary(document))
    if junit is not None:
        write_atomic(junit, junit_xml(document, behind))
        written.append(junit)
    return written
