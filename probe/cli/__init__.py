"""`probe` command line. Each command group lives in its own module and registers itself on `app`."""

from probe.cli import taxonomy_cmd  # noqa: F401  (registers commands)
from probe.cli.app import app


def main() -> None:
    app()
