"""A release policy: the `[[gates]]` of a gates.toml (or of a RUN.toml), read and checked before any data is.

Every mistake is one line naming the file, the gate and the key (DESIGN.md section 8), so a CI job that edits
its policy learns what is wrong without reading a traceback.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probe.analysis.metric_registry import METRICS, STAGE1_METRICS, STAGE2_METRICS
from probe.common.errors import UserError
from probe.common.user_text import checked_text
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION

KINDS = ("equivalence", "max", "min", "non_inferiority", "occupations")
# The keys each kind takes beside name, kind, metric and condition (required ones first).
_REQUIRED = {"equivalence": ("target", "margin"), "max": ("limit",), "min": ("limit",),
             "non_inferiority": ("margin", "worse"), "occupations": ()}  # fmt: skip
_OPTIONAL = {"occupations": ("occupations",)}
WORSE = ("higher", "lower")


@dataclass(frozen=True)
class Gate:
    """One gate. `metric` is None for an occupations gate; `occupations` limits that gate to a list."""

    name: str
    kind: str
    condition: str
    metric: str | None = None
    target: float | None = None
    margin: float | None = None
    limit: float | None = None
    worse: str | None = None
    occupations: tuple[str, ...] = field(default=())

    @property
    def needs_baseline(self) -> bool:
        return self.kind == "non_inferiority"


def load_policy(path: Path | str) -> list[Gate]:
    """The gates of a TOML file, checked; a UserError naming the file and key for the first mistake."""
    path = Path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such policy file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: not a TOML file ({error})") from None
    return parse_policy(document, str(path))


def parse_policy(document: dict[str, Any], source: str = "policy") -> list[Gate]:
    """Gates from a parsed TOML document (its `gates` array of tables)."""
    entries = document.get("gates")
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise UserError(f"{source}: no [[gates]] tables (each gate is a [[gates]] table with name, metric, kind ...)")
    gates = [_gate(entry, f"{source}: gates[{index}]") for index, entry in enumerate(entries, start=1)]
    names = [gate.name for gate in gates]
    duplicate = next((name for name in names if names.count(name) > 1), None)
    if duplicate is not None:
        raise UserError(f"{source}: two gates are named {duplicate!r}; names identify gates in the JUnit report")
    return gates


def _gate(entry: dict[str, Any], where: str) -> Gate:
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{where}: key 'name' must be a non-empty string")
    # the name is a JUnit testcase name and a Markdown cell: control characters (which XML 1.0 cannot carry) and
    # invisible ones are refused, as in names and occupations
    name = checked_text(name, f"{where}: key 'name'")
    where = f"{where} ({name!r})"
    kind = entry.get("kind")
    if kind not in KINDS:
        raise UserError(f"{where}: key 'kind' must be one of {', '.join(KINDS)} (got {kind!r})")
    allowed = {"name", "kind", "condition", *_REQUIRED[kind], *_OPTIONAL.get(kind, ())}
    if kind != "occupations":
        allowed.add("metric")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r} for a {kind} gate (keys: {', '.join(sorted(allowed))})")
    missing = [key for key in ("condition", *_REQUIRED[kind]) if key not in entry]
    if kind != "occupations" and "metric" not in entry:
        missing.insert(0, "metric")
    if missing:
        raise UserError(f"{where}: key {missing[0]!r} is missing")
    metric = entry.get("metric")
    if kind != "occupations" and (not isinstance(metric, str) or metric not in METRICS):
        raise UserError(f"{where}: unknown metric {metric!r} (choose from {', '.join(METRICS)})")
    condition = entry["condition"]
    if metric in STAGE1_METRICS:
        allowed_conditions = (STAGE1_CONDITION, *CONDITIONS) if metric in STAGE2_METRICS else (STAGE1_CONDITION,)
    else:
        allowed_conditions = CONDITIONS
    if condition not in allowed_conditions:
        raise UserError(f"{where}: key 'condition' must be one of {', '.join(allowed_conditions)} (got {condition!r})")
    values = {key: _number(entry[key], key, where) for key in ("target", "margin", "limit") if key in entry}
    if values.get("margin") is not None and values["margin"] <= 0:
        raise UserError(f"{where}: key 'margin' must be above 0 (got {values['margin']})")
    if values.get("margin") is not None and values["margin"] > 1:
        raise UserError(f"{where}: key 'margin' must be at most 1, on the metric's own scale (got "
                        f"{values['margin']:g}; 5 percentage points are 0.05)")  # fmt: skip
    lowest = -1.0 if metric is not None and METRICS[metric].kind == "difference" else 0.0
    for key in ("target", "limit"):
        if key in values and not lowest <= values[key] <= 1:
            raise UserError(f"{where}: key {key!r} must lie within {metric}'s range [{lowest:g}, 1] (got "
                            f"{values[key]:g}; 65% is 0.65)")  # fmt: skip
    if "worse" in entry and entry["worse"] not in WORSE:
        raise UserError(f"{where}: key 'worse' must be 'higher' or 'lower' (got {entry['worse']!r})")
    occupations = entry.get("occupations", [])
    if not isinstance(occupations, list) or not all(isinstance(item, str) for item in occupations):
        raise UserError(f"{where}: key 'occupations' must be a list of occupation names")
    if "occupations" in entry and not occupations:
        raise UserError(f"{where}: key 'occupations' is an empty list (leave the key out to gate every occupation)")
    return Gate(name=name, kind=kind, condition=condition, metric=metric, worse=entry.get("worse"),
                occupations=tuple(occupations), **values)  # fmt: skip


def _number(value: Any, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{where}: key {key!r} must be a number (got {value!r})")
    return float(value)
