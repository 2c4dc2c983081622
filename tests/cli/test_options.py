"""The run settings' options, declared once in probe/cli/options.py: each flag is a setting's key with dashes
(top_k -> --top-k), besides --config, the file the settings come from."""

from __future__ import annotations

import typing

from probe.cli import options
from probe.store.spec import SETTINGS


def _flags() -> dict[str, str]:
    """Each option's flag by its name in options.py."""
    return {
        name: typing.get_args(value)[1].default
        for name, value in vars(options).items()
        if name.endswith("Option") and typing.get_origin(value) is typing.Annotated
    }


def test_each_flag_is_a_settings_key_with_dashes() -> None:
    flags = _flags()
    assert flags["TopKOption"] == "--top-k" and flags["RunDbOption"] == "--db"
    assert {flag for name, flag in flags.items() if name != "ConfigOption"} <= {
        "--" + key.replace("_", "-") for key in SETTINGS
    }
    assert flags["ConfigOption"] == "--config" and "config" not in SETTINGS


def test_the_preset_help_names_every_preset() -> None:
    assert typing.get_args(options.PresetOption)[1].help == "Settings preset: quick, paper."


def test_a_held_out_contrast_needs_a_held_out_seed() -> None:
    from typer.testing import CliRunner

    from probe.cli import app

    result = CliRunner().invoke(app, ["compare", "a", "b", "--heldout-contrast", "Black,White", "--db", "none.duckdb"])
    assert result.exit_code == 2
    assert "--heldout-contrast: a held-out check's contrast; give --heldout-seed too" in result.output
