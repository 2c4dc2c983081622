"""`probe` command line. Each command group lives in its own module and registers itself on `app`."""

from probe.cli import (
    analyze_cmd,  # noqa: F401  (registers commands)
    report_cmd,  # noqa: F401  (registers commands)
    run_cmd,  # noqa: F401  (registers commands)
    runs_cmd,  # noqa: F401  (registers commands)
    scan_cmd,  # noqa: F401  (registers commands)
    taxonomy_cmd,  # noqa: F401  (registers commands)
)
from probe.cli.app import app


def main() -> None:
    app()
