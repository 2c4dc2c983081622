"""The layout the team guide asks for: no import cycle, no module over 400 lines, one pipeline.

Imports are read from the source (every `import`, also those inside functions), so a cycle hidden behind a
lazy import counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "probe"
MAX_LINES = 400


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


def test_the_store_imports_no_pipeline_step() -> None:
    """db.py opens the store; it needs only the error type and the seed data, never a step that uses it."""
    assert _graph()["probe.db"] <= {"probe.errors", "probe.snapshot"}
    assert "probe.db" not in _graph()["probe.snapshot"]


def test_no_module_over_400_lines() -> None:
    long = {name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_cli_and_the_api_take_the_one_pipeline() -> None:
    """Only probe.pipeline drives the runner: a setting goes from the CLI or the API to each step from there."""
    graph = _graph()
    drivers = {name for name, imported in graph.items() if "probe.runner" in imported}
    assert drivers == {"probe.pipeline"}
    assert "probe.pipeline" in graph["probe.api"] and "probe.pipeline" in graph["probe.cli.run_cmd"]


def test_the_runner_reads_no_settings_and_builds_no_step() -> None:
    """A setting reaches each step from the pipeline, never through runner.py: the runner answers with what it
    is handed (backend, selection, conditions) and does not read RunConfig, pick a backend, resolve the
    taxonomy or write the run record."""
    assert _graph()["probe.runner"].isdisjoint({"probe.config", "probe.backends", "probe.runs", "probe.taxonomy"})
    assert _names_from(PACKAGE / "runner.py", "probe.selection") == {"Selection"}  # the type, not select()


def _names_from(path: Path, module: str) -> set[str]:
    """The names `path` imports from `module`."""
    return {
        alias.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    }
