"""A run's spec in three parts (probe/store/spec.py): each step receives only its part, the flat settings map onto
the parts one to one, and the names file is parsed once into a typed value."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from probe.backends import create_backend
from probe.store import db
from probe.store.config import load_config
from probe.store.spec import PART, PARTS, SETTINGS, BackendSpec, Design, Names, RunConfig, RunSpec
from probe.taxonomy.selection import select
from tests.support import ROOT

PACKAGE = ROOT / "probe"
# What each step may take from the spec: the taxonomy and the dataset the design, a backend its own settings.
ALLOWED = {
    "taxonomy": {"Design", "Names", "SET_COLUMNS"},
    "dataset": {"Design", "Names"},
    "backends": {"BackendSpec"},
}
PART_NAMES = {"RunSpec", "Design", "BackendSpec", "RunOptions", "RunConfig"}


def _spec_names_used(step: str) -> dict[str, set[str]]:
    """Per module of a step, the spec's classes it imports or names in its code (annotations included)."""
    found = {}
    for path in (PACKAGE / step).rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        names |= {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in PART_NAMES}
        names |= {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "probe.store.spec"
            for alias in node.names
        }
        found[path.name] = names & (PART_NAMES | {"Names", "SET_COLUMNS"})
    return found


@pytest.mark.parametrize("step", sorted(ALLOWED))
def test_no_step_reads_another_steps_part(step: str) -> None:
    beyond = {module: names - ALLOWED[step] for module, names in _spec_names_used(step).items()}
    assert {module: names for module, names in beyond.items() if names} == {}


def test_the_checker_sees_a_step_naming_the_whole_spec() -> None:
    tree = ast.parse("def select(con, spec: RunSpec): ...")
    assert {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} & PART_NAMES == {"RunSpec"}


def test_the_dataset_is_selected_from_the_design_alone_and_a_backend_built_from_its_part(
    db_file: Path, tmp_path: Path
) -> None:
    spec = load_config(
        {
            "pairs": 2,
            "occupations": "nurse",
            "top_k": 1,
            "backend": "replay",
            "answers": str(tmp_path / "a.csv"),
            "db": str(db_file),
        }
    )
    (tmp_path / "a.csv").write_text(
        "stage,qtype,condition,pair_id,name_order,occupation,subject,category,attribute,label\n"
    )
    con = db.connect(db_file)
    try:
        selection = select(con, spec.design)
    finally:
        con.close()
    assert list(selection.pairs["pair_id"]) == [1, 2]
    assert set(selection.attributes["occupation"]) == {"nurse"}
    backend = create_backend(spec.backend)
    try:
        assert backend.identity()["backend"] == "replay"
    finally:
        backend.close()
    assert not hasattr(spec.design, "db") and not hasattr(spec.backend, "run_id") and not hasattr(spec.design, "model")


def test_every_flat_setting_is_one_field_of_one_part_in_the_stored_order() -> None:
    fields = {(part, field.name) for part, kind in PARTS.items() for field in dataclasses.fields(kind)}
    assert sorted(PART.values()) == sorted(fields)
    assert len(SETTINGS) == len(set(SETTINGS)) == len(fields)
    assert PART["backend"] == ("backend", "kind") and PART["db"] == ("options", "db")
    assert list(RunSpec().settings()) == list(SETTINGS)


def test_a_stored_runs_settings_parse_back_to_the_same_spec(tmp_path: Path) -> None:
    spec = load_config(
        {
            "preset": "quick",
            "names": str(tmp_path / "n.csv"),
            "backend": "openai",
            "model": "m",
            "base_url": "http://a:1/v1",
            "wordings": "2",
            "run_id": "r1",
        }
    )
    assert load_config({}, stored=spec.settings()) == spec
    assert RunConfig(**spec.flat()) == spec
    assert spec.replaced(run_id="r2").options.run_id == "r2" and spec.replaced(run_id="r2").design == spec.design


def test_the_names_file_is_a_typed_value_read_once(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("female,male\nAnna,Ben\n")
    sets = tmp_path / "sets.csv"
    sets.write_text("set_id,name,sex\n1,Anna,female\n")
    chosen = load_config({"names": str(pairs)}).design.names
    assert chosen == Names(pairs) and chosen.sets is False
    assert load_config({"names": str(sets)}).design.names.sets is True
    pairs.write_text("set_id,name,sex\n1,Anna,female\n")  # read once: the value keeps what it found
    assert chosen.sets is False
    assert Design().names is None and BackendSpec().kind == "hf-causal"
