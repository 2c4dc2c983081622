"""The layout the team guide asks for: no import cycle, no module or test file over 400 lines, one pipeline,
imports only from the same or an earlier pipeline step, and one home for each word of the vocabulary.

Imports are read from the source (every `import`, also those inside functions), so a cycle hidden behind a
lazy import counts too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from probe.analysis.metric_registry import METRICS
from probe.common import vocabulary

PACKAGE = Path(__file__).resolve().parents[1] / "probe"
TESTS = Path(__file__).resolve().parent
MAX_LINES = 400

# The pipeline's steps in order, each a folder of probe/ (its __init__.py says what enters and what leaves). A
# module may import from its own step or an earlier one, never from a later one: the path runs one way. The last
# step, `cli`, is the entry layer: the CLI package and the modules beside it at the top of probe/ (the package
# itself re-exports the API), which drive every step.
STEPS = (
    "common",
    "store",
    "taxonomy",
    "dataset",
    "backends",
    "answering",
    "analysis",
    "report",
    "compare",
    "gates",
    "scanning",
    "integrations",
    "cli",
)
# The entry modules at the top of probe/: drivers of the steps, the only modules outside a step folder (a package
# here, such as probe.pipeline, with every module inside it).
ENTRY_MODULES = ("probe", "probe.__main__", "probe.api", "probe.pipeline")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The probe modules `path` imports (`from probe import x` names module probe.x when it is one)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module in modules:
            for alias in node.names:
                found.add(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None."""
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = "open"
        for target in sorted(graph.get(name, ())):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target] if target in path else [name, target]
            if target not in state and (found := visit(target, [*path, target])):
                return found
        state[name] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_package() -> None:
    assert _cycle(_graph()) is None


def test_the_dataset_imports_no_backend() -> None:
    """The dataset hands backends their questions (probe/dataset/questions.py); it takes nothing back from them."""
    dataset = {target for name, imported in _graph().items() if name.startswith("probe.dataset") for target in imported}
    assert not any(target.startswith("probe.backends") for target in dataset)


def test_the_store_imports_no_pipeline_step() -> None:
    """db.py opens the store; it needs only the error type, identifier quoting, the tables' DDL and the seed data,
    never a step."""
    common = {"probe.common.errors", "probe.common.staging"}
    assert _graph()["probe.store.db"] <= common | {"probe.store.snapshot", "probe.store.tables"}
    assert _graph()["probe.store.tables"] <= {"probe.store.snapshot"}
    assert "probe.store.db" not in _graph()["probe.store.snapshot"]


def test_the_cli_imports_only_the_pipeline_the_api_and_common() -> None:
    """probe/cli/ parses and prints: it reaches every step through the pipeline (probe/pipeline/front.py draws the
    steps' names it shows), so no command imports a step folder."""
    entry = ("probe.cli", "probe.pipeline", "probe.api", "probe.common")
    reached = {
        (name, target)
        for name, imported in _graph().items()
        if name.startswith("probe.cli")
        for target in imported
        if not target.startswith(entry)
    }
    assert reached == set()


def test_no_module_or_test_file_over_400_lines() -> None:
    files = [*PACKAGE.rglob("*.py"), *TESTS.rglob("*.py")]
    long = {path.name: n for path in files if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def _step(module: str) -> str | None:
    """The step of a module: its folder, or `cli` for the entry modules; None for any other top-level module."""
    if module in ENTRY_MODULES or module.startswith(tuple(f"{entry}." for entry in ENTRY_MODULES[1:])):
        return "cli"
    folder = module.split(".")[1]
    return folder if folder in STEPS and (PACKAGE / folder).is_dir() else None


def test_every_module_belongs_to_a_step() -> None:
    assert {name for name in _modules() if _step(name) is None} == set()


def test_every_step_is_a_package_that_says_what_enters_and_leaves() -> None:
    for step in STEPS:
        docstring = ast.get_docstring(ast.parse((PACKAGE / step / "__init__.py").read_text())) or ""
        assert "\nEnters: " in docstring and "\nLeaves: " in docstring, step


def test_imports_run_from_earlier_steps_to_later_ones_only() -> None:
    placed = {name: STEPS.index(step) for name in _modules() if (step := _step(name)) is not None}
    backwards = {
        (name, target)
        for name, imported in _graph().items()
        for target in imported
        if name in placed and target in placed and placed[target] > placed[name]
    }
    assert backwards == set()


def test_the_vocabulary_is_defined_once() -> None:
    """No module but vocabulary.py lists a vocabulary again, or spells the stage-1 condition or a run status."""
    listed = {
        vocabulary.CONDITIONS: "CONDITIONS",
        vocabulary.CATEGORIES: "CATEGORIES",
        vocabulary.QTYPES: "QTYPES",
        vocabulary.NAME_ORDERS: "NAME_ORDERS",
        vocabulary.DECODINGS: "DECODINGS",
        vocabulary.DECIDED_BY: "DECIDED_BY",
        vocabulary.RUN_STATUSES: "RUN_STATUSES",
    }
    words = {vocabulary.STAGE1_CONDITION, *vocabulary.RUN_STATUSES}
    found = set()
    for name, path in _modules().items():
        if name == "probe.common.vocabulary":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple) and all(isinstance(element, ast.Constant) for element in node.elts):
                values = tuple(element.value for element in node.elts)
                if values in listed:
                    found.add((name, listed[values]))
            elif isinstance(node, ast.Constant) and node.value in words:
                found.add((name, node.value))
    assert found == set()


# Strings spelled like a metric that name something else: report.json's share of unknown answers per question type
# (counts.by_qtype), and the report's control-condition sentence (render.py is at the 400-line limit). Only shrinks.
METRIC_LOOKALIKES = {
    ("probe.report.data", "unknown_rate"),
    ("probe.report.render", "bias"),
    ("probe.report.render", "bias_f"),
    ("probe.report.render", "bias_m"),
}


def test_metrics_are_named_by_the_registrys_constants() -> None:
    """A metric's name is written once, in metric_registry.py; every other module names it by its constant, so a
    renamed or removed metric fails at import, not as a silently empty lookup."""
    spelled = {
        (name, node.value)
        for name, path in _modules().items()
        if name != "probe.analysis.metric_registry"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in METRICS
    }
    assert spelled == METRIC_LOOKALIKES


def test_the_cli_and_the_api_take_the_one_pipeline() -> None:
    """Only the pipeline package drives the runner: a setting goes from the CLI or the API to each step from there."""
    graph = _graph()
    drivers = {name for name, imported in graph.items() if "probe.answering.runner" in imported}
    assert drivers == {"probe.pipeline", "probe.pipeline.batch"}
    assert "probe.pipeline" in graph["probe.api"] and "probe.pipeline" in graph["probe.cli.run_cmd"]


def test_no_command_opens_the_database() -> None:
    """A command prints what its flow returns (pipeline/, api.py): the flow opens the database, once, not the CLI."""
    opening = {
        name
        for name, path in _modules().items()
        if name.startswith("probe.cli.")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Name | ast.Attribute)
        and (getattr(node, "id", None) or node.attr) in ("connect", "connect_or_snapshot")
    }
    assert opening == set()


def test_the_runner_reads_no_settings_and_builds_no_step() -> None:
    """A setting reaches each step from the pipeline, never through runner.py: the runner answers with what it
    is handed (backend, selection, conditions) and does not read RunConfig, pick a backend, resolve the
    taxonomy or write the run record."""
    assert _graph()["probe.answering.runner"].isdisjoint(
        {
            "probe.store.config",
            "probe.backends",
            "probe.answering.runs",
            "probe.taxonomy.occupations",
            "probe.taxonomy.name_pairs",
        }
    )
    runner = PACKAGE / "answering" / "runner.py"
    assert _names_from(runner, "probe.taxonomy.selection") == {"Selection"}  # the type, not select()


def _names_from(path: Path, module: str) -> set[str]:
    """The names `path` imports from `module`."""
    return {
        alias.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    }


def test_the_entry_layer_reaches_the_scan_through_its_front() -> None:
    """probe/scanning/__init__.py is the scan's surface: the CLI, the API and the pipeline import none of the
    modules behind it, so they can move within the package."""
    graph = _graph()
    entry = {name for name in graph if _step(name) == "cli"}
    assert {(name, target) for name in entry for target in graph[name] if target.startswith("probe.scanning.")} == set()


# The files at the top of tests/: helpers every folder imports, and the tests of the house as a whole (this layout,
# the SQL text, the manual). Every other test sits in the folder of the step of probe/ it tests.
TOP_LEVEL = {"__init__.py", "conftest.py", "support.py", "documents.py", "tiny_models.py", "fake_openai_server.py"}
TOP_LEVEL |= {"vllm_like_server.py", "llamacpp_server_process.py", "test_structure.py", "test_sql_text.py"}
TOP_LEVEL |= {"test_docs.py", "interval_checks.py"}


def test_tests_mirror_the_steps_of_the_package() -> None:
    """tests/<step>/ for each folder of probe/ (tests/analysis/ tests probe/analysis/), each a package; a new test
    file at the top of tests/ belongs in one of them."""
    folders = {path.name for path in TESTS.iterdir() if path.is_dir() and path.name not in ("data", "__pycache__")}
    assert folders <= {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert {folder for folder in folders if not (TESTS / folder / "__init__.py").is_file()} == set()
    assert {path.name for path in TESTS.glob("*.py")} - TOP_LEVEL == set()


def _imported_by_tests(modules: dict[str, Path]) -> set[str]:
    """The probe modules the test files import by name (a package counts when a test imports from it)."""
    imported = set()
    for path in TESTS.rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported |= _imports(path, modules)
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} & set(modules)
    return imported


def test_every_module_is_imported_by_a_test() -> None:
    """Each module of probe/ has a test that imports it by name, not only a path through the CLI."""
    modules = _modules()
    assert set(modules) - _imported_by_tests(modules) == set()


def test_the_slowest_first_files_exist() -> None:
    """tests/conftest.py hands these files out first under `make test`: a file renamed or removed leaves the list."""
    from tests.conftest import SLOWEST_FIRST

    assert [path for path in SLOWEST_FIRST if not (TESTS.parent / path).is_file()] == []


def test_the_serial_phase_names_every_file_with_serial_tests() -> None:
    """`make test` runs the `serial` tests from the Makefile's SERIAL_FILES only: a serial test elsewhere would run
    in neither phase (the parallel one deselects it)."""
    from tests.conftest import serial_files

    marked = {
        path.relative_to(TESTS.parent).as_posix()
        for path in TESTS.rglob("*.py")
        if path.name != "test_structure.py" and "mark.serial" in path.read_text()
    }
    assert sorted(serial_files()) == sorted(marked)


def test_a_serial_test_outside_the_serial_files_fails_the_run() -> None:
    """tests/conftest.py checks every collected item's marker (the scan above reads the files' text)."""
    from tests.conftest import pytest_collection_modifyitems

    class Item:
        def __init__(self, nodeid: str, serial: bool) -> None:
            self.nodeid, self.serial = nodeid, serial

        def get_closest_marker(self, name: str) -> object | None:
            return pytest.mark.serial.mark if name == "serial" and self.serial else None

    items = [
        Item("tests/answering/test_stop_signals.py::test_a", serial=True),
        Item("tests/answering/test_runner.py::test_b", serial=True),
        Item("tests/answering/test_runner.py::test_c", serial=False),
    ]
    message = (
        "tests/answering/test_runner.py::test_b: marked serial, but its file is not in the Makefile's SERIAL_FILES "
        "(`make test` would run it in neither phase); add the file there"
    )
    with pytest.raises(pytest.UsageError, match=f"^{re.escape(message)}$"):
        pytest_collection_modifyitems(items)
    pytest_collection_modifyitems(items[:1] + items[2:])  # the serial test in SERIAL_FILES, the other unmarked
