"""`probe gate RUN_ID --policy gates.toml`: release gates a CI pipeline acts on (probe/gates/).

Exit codes: 0 every gate passes, 1 a gate fails, 4 a gate fails on its own but the policy's family-wise control
(gate_family = "holm") does not confirm it, 3 inconclusive and none of those (4 and 3 are 1 with --strict), 2 a
usage or policy error (as every command).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from probe import pipeline
from probe.cli.app import DbOption, app
from probe.common.escape import terminal_text
from probe.pipeline.front import DEFAULT_DB


@app.command("gate")
def gate_command(
    run_id: Annotated[str, typer.Argument(help="The run to gate.")],
    # "[\\[": the help renderer reads [...] as markup and printed "with [] tables"; escaped, it shows [[gates]]
    policy: Annotated[Path, typer.Option("--policy", help="gates.toml (or a RUN.toml) with [\\[gates]] tables.")],
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="Run to compare with (non_inferiority gates): same pairs.")
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Folder for gate.json and gate.md (default: beside the run).")
    ] = None,
    plan: Annotated[
        bool, typer.Option("--plan", help="Print the name pairs (name sets) each gate needs for 80% power.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Inconclusive and unconfirmed gates fail the job (exit 1).")
    ] = False,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Check a run against a bias policy: pass, fail or inconclusive per gate, with the numbers behind each.

    Exit 0 all pass, 1 a gate fails, 3 inconclusive, 4 a fail that the policy's gate_family = "holm" leaves unconfirmed.
    """
    if plan:
        from probe.pipeline.front_statistics import MOST_PAIRS, run_for  # the statistics stack: loaded on use

        rows = pipeline.gate_plan(db, run_id, policy, baseline)
        for row in rows:
            needed = row["pairs_needed"]
            shown = f"more than {MOST_PAIRS:,}" if needed is not None and needed > MOST_PAIRS else needed
            typer.echo(
                terminal_text(
                    f"{row['gate']}: {shown} {row['unit']}"
                    if needed is not None
                    else f"{row['gate']}: no figure ({row['note']})"
                )
            )
        units = list(dict.fromkeys(row["unit"] for row in rows))  # the run to ask, per unit its gates count in
        for unit in units:
            figures = [row["pairs_needed"] for row in rows if row["unit"] == unit and row["pairs_needed"] is not None]
            largest = max(figures, default=None)
            command = None if largest is None else run_for(largest, unit)
            if command is not None:
                typer.echo(f"every gate{'' if len(units) == 1 else f' counted in {unit}'}: {command}")
        return
    result = pipeline.gate(db, run_id, policy, baseline, output, junit)
    for verdict in result.verdicts:
        typer.echo(terminal_text(f"{verdict.verdict.upper():<12} {verdict.gate.name}: {verdict.summary}"))
    typer.echo(terminal_text(f"outcome: {result.outcome}; " + ", ".join(str(path) for path in result.files)))
    raise typer.Exit(result.exit_code(strict))
