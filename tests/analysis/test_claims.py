"""One claim, one test (issue 37): over many random runs through the real analyze() and report document, no
sentence's direction, strength or "holds / not shown / depends / generalizes" disagrees with the test it quotes.

Runs are simulated as bench/ does (bench/worlds.py: one wording with stage 1; bench/wordings.py: several wordings),
with random sizes and effects, seeded: items and answers into a DuckDB with the product's schema, then
probe.analysis.metrics.analyze and probe.report.document.summary. Each sentence is read back against the numbers
beside it in report.json: a direction only where its test rejects (p < 0.05, interval beside it excluding the
null), under a wording only where that wording's own test rejects, over all wordings together only where both the
run's own test and the crossed test reject, a pair's lean only where its interval excludes 50%.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.wordings import WordingWorld, simulated_labels
from bench.worlds import ParametricWorld, to_frames
from probe.analysis.metric_registry import METRICS
from probe.analysis.metrics import analyze
from probe.analysis.statistics import MIN_PAIRS
from probe.compare.heldout import _generalizes
from probe.report.document import summary
from probe.report.findings import DIRECTIONS
from probe.store.db import SCHEMA
from tests.interval_checks import interval_problems

RUNS = 14


def _store(con: duckdb.DuckDBPyConnection, items: pd.DataFrame, answers: pd.DataFrame) -> dict[str, Any]:
    for table in ("runs", "items", "answers"):
        con.execute(f"DELETE FROM {table}")
    con.execute("INSERT INTO runs (run_id, status) VALUES ('sim', 'complete')")
    items = items.assign(options_json="[]", prompt="p")
    items["seq"] = range(len(items))
    for table, frame in (("items", items), ("answers", answers)):
        con.register("frame", frame)
        con.execute(f"INSERT INTO {table} BY NAME SELECT 'sim' AS run_id, * FROM frame")
        con.unregister("frame")
    analyze(con, "sim")
    return summary(con, "sim")


def _random_run(con: duckdb.DuckDBPyConnection, seed: int) -> dict[str, Any]:
    """A run of 3 to 14 pairs, in one wording with stage 1 (even seeds) or in 2 to 4 wordings, random effects."""
    rng = np.random.default_rng(seed)
    pairs = int(rng.integers(3, 15))
    if seed % 2 == 0:
        world = ParametricWorld(
            occupations=4, attributes=6, pair_sd=float(rng.uniform(0, 1.5)), female_lean=float(rng.uniform(-2, 2))
        )
        items, answers = to_frames(world.draw(rng, pairs))
        return _store(con, items.assign(wording="paper"), answers)
    world = WordingWorld(
        "random",
        wording=float(rng.uniform(0, 1.2)),
        pair=float(rng.uniform(0, 1.2)),
        base=float(rng.uniform(-1.5, 1.5)),
        position=float(rng.uniform(-1, 1)),
    )
    labels = simulated_labels(world, pairs, int(rng.integers(2, 5)), rng)
    items = labels.drop(columns="label").assign(item_id=[f"i{index}" for index in range(len(labels))])
    return _store(con, items, pd.DataFrame({"item_id": items["item_id"], "label": labels["label"]}))


def _rejects(p_value: float | None) -> bool:
    return p_value is not None and p_value < 0.05


def _side(value: float, null: float, metric: str) -> str:
    """The direction phrase a value's side of the null reads as (lower-case)."""
    phrase = DIRECTIONS[metric][1 if value > null else 2]
    return phrase[0].lower() + phrase[1:]


def _wording_problems(where: str, text: str, metric: str, finding: Mapping[str, Any], own: Any) -> list[str]:
    """The claims under each wording and over all wordings together against the tests they rest on."""
    null, problems = METRICS[metric].null, []
    by_wording = {entry["wording"]: entry for entry in finding["per_wording"]}
    phrases = {_side(1.0, null, metric), _side(-1.0, null, metric)}
    for phrase in phrases:
        for listed in re.findall(re.escape(phrase) + r" under ([\w, ]+?) alone", text):
            for wording in listed.split(", "):
                entry = by_wording[wording]
                if not _rejects(entry["p_value"]) or _side(entry["estimate"], null, metric) != phrase:
                    problems.append(f"{where}: '{phrase}' under {wording} beside p = {entry['p_value']}")
    holds = "holds under every wording" in text
    every = (
        all(_rejects(e["p_value"]) for e in by_wording.values())
        and len({_side(e["estimate"], null, metric) for e in by_wording.values()}) == 1
    )
    if holds != (every and finding["pairs"] >= MIN_PAIRS):
        problems.append(f"{where}: 'holds under every wording' = {holds}, each wording's test rejects = {every}")
    if "not shown under any" in text and any(_rejects(e["p_value"]) for e in by_wording.values()):
        problems.append(f"{where}: 'not shown under any wording' beside a wording whose test rejects")
    together = ("over all wordings together " + _side(own["value"], null, metric)) in text if own else False
    both = (
        own is not None
        and _rejects(own["p_value"])
        and _rejects(finding["p_value"])
        and (_side(own["value"], null, metric) == _side(finding["estimate"], null, metric))
    )
    if together != (both and finding["pairs"] >= MIN_PAIRS):
        problems.append(f"{where}: over all wordings together shown = {together}, both tests reject = {both}")
    return problems


def claim_problems(document: Mapping[str, Any]) -> list[str]:
    """Every sentence of a report.json whose claim its own test does not back."""
    problems = list(interval_problems(document))
    robustness = {(f["condition"], f["metric"]): f for f in (document["robustness"] or {"findings": []})["findings"]}
    for finding in document["headline"]:
        test, metric, text = finding.get("test"), finding["metric"], finding["finding"]
        if not test:
            continue
        where, robust = f"headline {metric}", robustness.get((finding["condition"], metric))
        if robust is not None and (test["testable"] or _rejects(test["p_value"])):  # the robustness claim, verbatim
            if robust["claim"] not in text:
                problems.append(f"{where}: the Summary's claim is not the robustness section's")
            own = document["overall"][finding["condition"]][metric]
            problems += _wording_problems(where, text, metric, robust, own)
            continue
        effect, above, below = DIRECTIONS[metric]
        stated = f"{above} (p" in text or f"{below} (p" in text
        if stated != _rejects(test["p_value"]) or (stated and (above in text) != (finding["estimate"] > test["null"])):
            problems.append(f"{where}: direction stated = {stated} beside p = {test['p_value']}")
        if f"No significant {effect}" in text and not test["testable"]:
            problems.append(f"{where}: 'no significant' for a test that is not testable")
    for key, finding in robustness.items():
        if finding["null"] is not None:
            own = document["overall"][key[0]][key[1]]
            problems += _wording_problems(f"robustness {key}", finding["finding"], key[1], finding, own)
        elif finding["verdict"] != "not_testable" and (finding["verdict"] == "depends") != _rejects(
            finding["wording_p"]
        ):
            problems.append(f"robustness {key}: {finding['verdict']} beside wording test p = {finding['wording_p']}")
    bottom = document["bottom_line"]
    headline = {(f["condition"], f["metric"]): f for f in document["headline"]}
    for verdict in bottom["verdicts"]:
        lead = headline.get((verdict["condition"], verdict["metric"]))
        claimed = (lead or {}).get("robustness", {}).get("together")
        shown = claimed == "shown" if claimed is not None else _rejects(verdict["p_value"])
        if bool(verdict["shown"]) != shown or (verdict["direction"] is not None) != shown:
            problems.append(f"bottom line {verdict['metric']}: shown = {verdict['shown']}, its test: {shown}")
    pairs = bottom["pairs"]
    for row in (pairs or {"rows": []})["rows"]:
        lean = "female" if row["ci_low"] > 0.5 else "male" if row["ci_high"] < 0.5 else "none"
        if row["lean"] != lean or not row["ci_low"] < row["ci_high"]:
            problems.append(f"pair {row['pair_id']}: lean {row['lean']} beside [{row['ci_low']}, {row['ci_high']}]")
    test = (pairs or {}).get("heterogeneity")
    if test and ("The name pairs differ" in test["sentence"]) != _rejects(test["p_value"]):
        problems.append(f"heterogeneity: '{test['sentence']}' beside p = {test['p_value']}")
    return problems


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    con = duckdb.connect()
    con.execute(SCHEMA)
    try:
        return [_random_run(con, seed) for seed in range(RUNS)]
    finally:
        con.close()


def test_no_sentence_of_a_random_run_disagrees_with_its_test(documents: list[dict[str, Any]]) -> None:
    problems = [
        f"run {seed}: {problem}" for seed, document in enumerate(documents) for problem in claim_problems(document)
    ]
    assert problems == []


def test_the_random_runs_reach_every_kind_of_claim(documents: list[dict[str, Any]]) -> None:
    """The property test means something only where the runs make each kind of claim, both ways."""
    headline = [f for d in documents for f in d["headline"] if f.get("test")]
    rejected = [_rejects(f["test"]["p_value"]) for f in headline]
    assert any(rejected) and not all(rejected)
    verdicts = {f["verdict"] for d in documents for f in (d["robustness"] or {"findings": []})["findings"]}
    assert {"not_testable", "holds", "not_shown"} <= verdicts
    together = {
        f["together"] for d in documents for f in (d["robustness"] or {"findings": []})["findings"] if "together" in f
    }
    assert together == {"shown", "not_shown", "not_testable"}
    leans = {row["lean"] for d in documents for row in d["bottom_line"]["pairs"]["rows"]}
    assert leans == {"female", "male", "none"}


def test_a_claim_problem_is_found_where_a_sentence_overstates(documents: list[dict[str, Any]]) -> None:
    """The checker itself: the old verdict ("holds" on the crossed test alone) is caught."""
    document = next(
        d
        for d in documents
        if d["robustness"] and any(f["verdict"] == "not_shown" for f in d["robustness"]["findings"])
    )
    finding = next(f for f in document["robustness"]["findings"] if f["verdict"] == "not_shown")
    overstated = {**finding, "finding": finding["finding"].replace("not shown under any", "holds under every wording")}
    own = document["overall"][finding["condition"]][finding["metric"]]
    assert _wording_problems("x", overstated["finding"], finding["metric"], overstated, own) != []


interval = st.one_of(st.none(), st.floats(-0.5, 0.5))


@settings(max_examples=300, deadline=None)
@given(
    tuning_low=interval, held_low=interval, width=st.floats(0.01, 0.5), smaller_p=st.one_of(st.none(), st.floats(0, 1))
)
def test_generalizes_only_where_the_tuning_effect_and_the_held_out_one_are_shown(
    tuning_low: float | None, held_low: float | None, width: float, smaller_p: float | None
) -> None:
    """Issue 37: 'Generalizes: no' was said of a tuning effect of +14.6 [-9.5, +38.7]; a verdict is reached only
    where both intervals exist and the tuning one lies above 0."""
    tuning = {"ci_low": tuning_low, "ci_high": None if tuning_low is None else tuning_low + width}
    held_out = {"ci_low": held_low, "ci_high": None if held_low is None else held_low + width}
    result = _generalizes(tuning, held_out, smaller_p)
    if tuning_low is None or held_low is None:
        assert result == {"generalizes": None, "verdict": "too few pairs"}
    elif tuning_low <= 0:
        assert result == {"generalizes": None, "verdict": "no tuning effect to generalize"}
    else:
        shown = held_low > 0 and not (smaller_p is not None and smaller_p < 0.05)
        assert result["generalizes"] is shown
        assert result["verdict"].startswith(
            "yes" if shown else ("no" if smaller_p is not None and smaller_p < 0.05 else "not shown")
        )
