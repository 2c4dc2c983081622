"""`probe taxonomy ...`: import an O*NET release, show an occupation's top attributes, search titles."""

import typer

from probe.cli.app import app

taxonomy_app = typer.Typer(help="The O*NET occupation-attribute store.", no_args_is_help=True)
app.add_typer(taxonomy_app, name="taxonomy")
