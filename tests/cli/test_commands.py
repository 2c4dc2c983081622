"""Each command of `probe` lives in the module of probe/cli/ named for it and registers itself on the one `app`
(probe/cli/__init__.py imports them all), and `--version` prints the installed version. What each command does: the
tests of its step (`python -m probe`: test_export_cli.py)."""

from __future__ import annotations

import sys
from types import ModuleType

from typer.testing import CliRunner

from probe.cli import (
    analyze_cmd,
    app,
    batch_cmd,
    export_cmd,
    gate_cmd,
    import_cmd,
    report_cmd,
    run_cmd,
    runs_cmd,
    scan_cmd,
    schema_cmd,
    taxonomy_cmd,
)
from probe.common import version


def _home(callback) -> ModuleType:
    return sys.modules[callback.__module__]


def test_each_command_is_registered_by_its_own_module() -> None:
    commands = {command.name: _home(command.callback) for command in app.registered_commands}
    groups = {
        f"{group.name} {command.name}": _home(command.callback)
        for group in app.registered_groups
        for command in group.typer_instance.registered_commands
    }
    assert commands == {
        "analyze": analyze_cmd,
        "report": report_cmd,
        "compare": report_cmd,
        "run": run_cmd,
        "export": export_cmd,
        "gate": gate_cmd,
        "runs": runs_cmd,
        "scan": scan_cmd,
        "schema": schema_cmd,
    }
    assert groups == {
        "batch export": batch_cmd,
        "batch import": batch_cmd,
        "dataset preview": run_cmd,
        "import lm-eval": import_cmd,
        "import inspect": import_cmd,
        "import decisions": import_cmd,
        "import bloomberg": import_cmd,
        "taxonomy import": taxonomy_cmd,
        "taxonomy show": taxonomy_cmd,
        "taxonomy search": taxonomy_cmd,
    }


def test_version_prints_the_installed_version() -> None:
    shown = CliRunner().invoke(app, ["--version"])
    assert (shown.exit_code, shown.output) == (0, f"probe (taxonomy-probe) {version.__version__}\n")
