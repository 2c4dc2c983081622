"""A release policy: the `[[gates]]` of a gates.toml (or of a RUN.toml), read and checked before any data is.

Every mistake is one line naming the file, the gate and the key (DESIGN.md section 8), so a CI job that edits
its policy learns what is wrong without reading a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probe.analysis.metric_registry import METRICS
from probe.common.errors import UserError
from probe.common.toml_file import read_toml_file
from probe.common.user_text import checked_text
from probe.gates.gate import Gate
from probe.gates.kinds import KINDS

FAMILY_KEY = "gate_family"  # top-level: the family-wise control of fails a policy asks for (none: each gate alone)
FAMILIES = ("holm",)


def load_policy(path: Path | str) -> Policy:
    """The policy of a TOML file, checked; a UserError naming the file and key for the first mistake."""
    path = Path(path)
    return parse_policy(read_toml_file(path), str(path))


@dataclass(frozen=True)
class Policy:
    """The gates of a policy and how their fails are read together: `family` None decides each gate on its own
    (a gate that fails its own test fails the release); "holm" claims a fail only where Holm's step-down over
    every gate confirms it (family-wise error at 5%; a fail it does not confirm is "unconfirmed")."""

    gates: list[Gate]
    family: str | None = None


def parse_policy(document: dict[str, Any], source: str = "policy") -> Policy:
    """The policy of a parsed TOML document: its `gates` array of tables and its top-level `gate_family`."""
    entries = document.get("gates")
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise UserError(f"{source}: no [[gates]] tables (each gate is a [[gates]] table with name, metric, kind ...)")
    gates = [_gate(entry, f"{source}: gates[{index}]") for index, entry in enumerate(entries, start=1)]
    names = [gate.name for gate in gates]
    duplicate = next((name for name in names if names.count(name) > 1), None)
    if duplicate is not None:
        raise UserError(f"{source}: two gates are named {duplicate!r}; names identify gates in the JUnit report")
    family = document.get(FAMILY_KEY)
    if family is not None and family not in FAMILIES:
        choices = " or ".join(map(repr, FAMILIES))
        raise UserError(
            f"{source}: key {FAMILY_KEY!r} must be {choices} (got {family!r}; leave it out to decide each "
            "gate on its own)"
        )
    return Policy(gates, family)


def _gate(entry: dict[str, Any], where: str) -> Gate:
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{where}: key 'name' must be a non-empty string")
    # the name is a JUnit testcase name and a Markdown cell: control characters (which XML 1.0 cannot carry) and
    # invisible ones are refused, as in names and occupations
    name = checked_text(name, f"{where}: key 'name'")
    where = f"{where} ({name!r})"
    kind = KINDS.get(entry.get("kind")) if isinstance(entry.get("kind"), str) else None
    if kind is None:
        raise UserError(f"{where}: key 'kind' must be one of {', '.join(KINDS)} (got {entry.get('kind')!r})")
    own = {key.name: key for key in kind.keys}
    allowed = {"name", "kind", "condition", *own, *(("metric",) if kind.takes_metric else ())}
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise UserError(
            f"{where}: unknown key {unknown[0]!r} for a {kind.name} gate (keys: {', '.join(sorted(allowed))})"
        )
    required = [*(("metric",) if kind.takes_metric else ()), "condition"]
    required += [name for name, key in own.items() if key.required]
    missing = [key for key in required if key not in entry]
    if missing:
        raise UserError(f"{where}: key {missing[0]!r} is missing")
    metric = entry.get("metric")
    if kind.takes_metric and (not isinstance(metric, str) or metric not in METRICS):
        raise UserError(f"{where}: unknown metric {metric!r} (choose from {', '.join(METRICS)})")
    condition = entry["condition"]
    conditions = kind.conditions(metric)
    if condition not in conditions:
        raise UserError(f"{where}: key 'condition' must be one of {', '.join(conditions)} (got {condition!r})")
    settings = {
        name: key.check(entry[name], metric, where) if name in entry else key.default for name, key in own.items()
    }
    kind.check(settings, metric, where)
    return Gate(name=name, kind=kind, condition=condition, metric=metric, settings=settings)
