"""Gate policies that name what a run never asked, and output paths that are files or folders: one-line errors."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from probe.cli import app
from probe.store import db
from tests.gates.test_gates import POLICY, _policy


def test_a_gate_on_what_the_run_never_asked_is_a_policy_error(runs_db_file: Path, tmp_path: Path) -> None:
    # found by review: a condition the run lacks gave "inconclusive" (exit 3) for an interval gate and a KeyError
    # traceback for an occupations gate; a metric the condition lacks (context_sensitivity compares taxonomy with
    # baseline, so only taxonomy has it) gave "inconclusive" too
    con = db.connect(runs_db_file)
    con.execute(
        "DELETE FROM answers WHERE run_id = 'first' AND item_id IN (SELECT item_id FROM items WHERE "
        "run_id = 'first' AND condition = 'control')"
    )
    con.execute("DELETE FROM items WHERE run_id = 'first' AND condition = 'control'")
    con.close()
    cases = [
        (
            '[[gates]]\nname = "o"\ncondition = "control"\nkind = "occupations"\nmargin = 0.1\n',
            "error: gate 'o': key 'condition': run 'first' has no condition 'control' (its conditions: baseline, "
            "stage1, taxonomy)\n",
        ),
        (
            '[[gates]]\nname = "s"\nmetric = "female_share"\ncondition = "control"\nkind = "max"\nlimit = 0.6\n',
            "error: gate 's': key 'condition': run 'first' has no condition 'control' (its conditions: baseline, "
            "stage1, taxonomy)\n",
        ),
        (
            '[[gates]]\nname = "c"\nmetric = "context_sensitivity"\ncondition = "baseline"\n'
            'kind = "max"\nlimit = 0.6\n',
            "error: gate 'c': key 'metric': run 'first' has no context_sensitivity for condition 'baseline'\n",
        ),
    ]
    for index, (text, message) in enumerate(cases):
        policy = _policy(tmp_path, text, f"p{index}.toml")
        for extra in ([], ["--plan"]):
            args = [
                "gate",
                "first",
                "--policy",
                str(policy),
                "--db",
                str(runs_db_file),
                "-o",
                str(tmp_path / f"out{index}"),
                *extra,
            ]
            result = CliRunner().invoke(app, args)
            assert (result.exit_code, result.output) == (2, message), (args, result.output)
    assert not any((tmp_path / f"out{index}").exists() for index in range(len(cases)))


def test_output_paths_that_are_files_or_folders_are_one_line_errors(runs_db_file: Path, tmp_path: Path) -> None:
    # found by review: -o FILE and --policy FOLDER gave click's boxed usage text; --junit FOLDER failed naming a
    # temporary file after gate.json and gate.md were written
    policy = _policy(tmp_path, "[[gates]]" + POLICY.split("[[gates]]")[2])
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder is expected")
    (tmp_path / "folder").mkdir()
    cases = [
        (
            ["--policy", str(policy), "-o", str(blocker)],
            f"error: -o {blocker}: is a file; name a folder for gate.json and gate.md\n",
        ),
        (
            ["--policy", str(policy), "-o", str(tmp_path / "out"), "--junit", str(tmp_path / "folder")],
            f"error: --junit {tmp_path / 'folder'}: is a folder; name the XML file to write (gates.xml)\n",
        ),
        (["--policy", str(tmp_path / "folder")], f"error: {tmp_path / 'folder'}: Is a directory\n"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(app, ["gate", "first", "--db", str(runs_db_file), *args])
        assert (result.exit_code, result.output) == (2, message)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["blocker", "folder", "gates.toml", "probe.duckdb"]
