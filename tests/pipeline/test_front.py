"""probe/pipeline/front.py and front_statistics.py are the command line's one door to the steps: each name they
re-export is the step's own object, and each is used by a command (a name no command imports is dead weight on
every start-up)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from probe.analysis import metric_registry
from probe.pipeline import front, front_statistics
from probe.store import db, spec

CLI = Path(front.__file__).resolve().parents[1] / "cli"


def _exported(module: object) -> set[str]:
    """The names a front module imports to hand on (`from x import y as y`)."""
    tree = ast.parse(Path(module.__file__).read_text())
    return {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


def _used_by_the_cli(module_name: str) -> set[str]:
    """The names probe/cli/ imports from `module_name`."""
    return {
        alias.name
        for path in CLI.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == module_name
        for alias in node.names
    }


def test_every_name_the_front_hands_on_is_used_by_a_command() -> None:
    assert _exported(front) == _used_by_the_cli("probe.pipeline.front")
    assert _exported(front_statistics) == _used_by_the_cli("probe.pipeline.front_statistics")


def test_the_front_hands_on_the_steps_own_objects() -> None:
    assert front.DEFAULT_DB == db.DEFAULT_DB == Path("runs/probe.duckdb")
    assert front.RunSpec is spec.RunSpec
    assert front_statistics.METRICS is metric_registry.METRICS
    assert front_statistics.fmt_p(0.0004) == "<0.001"


def test_the_front_and_probe_help_load_no_statistics_stack() -> None:
    """Every command imports the front: importing it, and `probe --help`, load neither scipy nor statsmodels (a run's
    outcome reads the contrasts' names on use)."""
    code = (
        "import sys, probe.pipeline.front; from probe.cli.app import app\n"
        "try:\n    app(['--help'], prog_name='probe')\nexcept SystemExit as done:\n    code = done.code\n"
        "print(code, [m for m in ('scipy', 'statsmodels') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "0 []"
