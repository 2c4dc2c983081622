"""`probe schema report|compare`: print the published JSON Schema of report.json or compare.json."""

import json
from typing import Annotated

import typer

from probe import api
from probe.cli.app import app


@app.command("schema")
def schema_command(
    document: Annotated[str, typer.Argument(help="The document: report (report.json) or compare (compare.json).")],
) -> None:
    """Print the JSON Schema (draft 2020-12) of report.json or compare.json; every document the probe writes
    validates against it, and its schema_version names the documents it describes."""
    typer.echo(json.dumps(api.schema(document), indent=2))
