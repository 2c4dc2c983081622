"""The records a policy is read into and decided as: a gate, the kind of gate it is, its verdict.

A kind (probe/gates/kinds/) is an object: the policy keys it takes with their checks (keys.py), whether it reads a
metric or a baseline run, and its verdict - which also states the name pairs that would decide it (`needed`), so
`probe gate` and `probe gate --plan` read one computation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import duckdb

from probe.analysis.metric_registry import STAGE1_METRICS, STAGE2_METRICS
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.gates.keys import Key

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
UNCONFIRMED = "unconfirmed"  # fails its own test, not confirmed by the family's Holm step (policy gate_family)
# 4, not 3: an unconfirmed fail is evidence against the gate, not a lack of data, so a job that lets inconclusive
# gates through (exit 3) still stops on it unless it lets 4 through too; not 1, which the family reserves for fails
# it confirms. The order: the outcome of several gates is the first of these any gate has.
EXIT_CODES = {FAIL: 1, UNCONFIRMED: 4, INCONCLUSIVE: 3, PASS: 0}


class PairsNeeded(NamedTuple):
    """The name pairs that would decide a gate with 80% power (None: no count does), and why there is no figure."""

    pairs: int | None
    note: str | None = None


@dataclass(frozen=True, eq=False)
class Gate:
    """One gate of a policy: its kind and the values of the kind's keys (`settings`, checked by policy.py)."""

    name: str
    kind: GateKind
    condition: str
    metric: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_baseline(self) -> bool:
        return self.kind.needs_baseline


@dataclass
class Verdict:
    """One gate's outcome with every number behind it (gate.json, JUnit, Markdown)."""

    gate: Gate
    verdict: str
    sentence: str  # every number the verdict rests on and its method (gate.json, gate.md, JUnit)
    estimate: float | None = None
    ci90: tuple[float, float] | None = None
    ci95: tuple[float, float] | None = None
    band: tuple[float, float] | None = None  # the values that pass, where the gate has an interval
    p_fail: float | None = None
    p_fail_holm: float | None = None
    pairs: int = 0
    instances: int = 0
    method: str | None = None
    needed: PairsNeeded = field(default_factory=lambda: PairsNeeded(None))
    details: dict[str, Any] = field(default_factory=dict)
    summary: str = ""  # the verdict in one short line (the terminal)
    unit: str | None = None  # what `pairs` counts where the run decides it, not the kind (else the kind's unit)
    # the pairs needed were the fails held to another level (the family's Holm step: `fail_at` = 0.05 / gates)
    replan: Callable[..., PairsNeeded] | None = field(default=None, repr=False)

    @property
    def pairs_needed(self) -> int | None:
        """The pairs that would decide the gate, stated where the verdict is inconclusive or an unconfirmed fail
        (gate.json)."""
        return self.needed.pairs if self.verdict in (INCONCLUSIVE, UNCONFIRMED) else None


class GateKind:
    """A kind of gate. A subclass names itself, lists its keys (beside name, kind, condition and, where it
    `takes_metric`, metric) and decides a gate in `verdict`; kinds/__init__.py registers it."""

    name: str = ""
    keys: tuple[Key, ...] = ()
    takes_metric: bool = True
    needs_baseline: bool = False
    # the methods its verdicts name beyond statistics.METHODS, each in words (gate.json's methods)
    methods: ClassVar[dict[str, str]] = {}
    unit: ClassVar[str] = "name pairs"  # what its verdicts' pairs and pairs needed count (--plan says it)

    def conditions(self, metric: str | None) -> tuple[str, ...]:
        """The conditions a gate of this kind may name: stage 1 for the stage-1 rates, else the stage-2 ones."""
        if metric in STAGE1_METRICS:
            return (STAGE1_CONDITION, *CONDITIONS) if metric in STAGE2_METRICS else (STAGE1_CONDITION,)
        return CONDITIONS

    def check(self, settings: dict[str, Any], metric: str | None, where: str) -> None:
        """Checks between keys, after each key's own (a UserError naming `where`); none by default."""

    def verdict(self, con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, baseline: str | None) -> Verdict:
        """The gate's verdict on its own (before the family's Holm step), with `needed` set."""
        raise NotImplementedError

    def requirement(self, gate: Gate) -> str:
        """The gate's requirement in words ("within 0.5 +- 0.05", "at most 0.65", ...)."""
        raise NotImplementedError
