"""`probe` command line. Each command group lives in its own module and registers itself on `app`.

The entry layer, with probe/pipeline/ and probe/api.py beside this package: both the CLI and the API take
the one path of the pipeline through every step.
Enters: command lines (and, through api.py, API calls).
Leaves: printed tables (tables.py) and paths, exit codes.
"""

# Commands are listed in --help in the order they register: the batch group, then `run` and the dataset group (after
# analyze, report and compare, which run_cmd imports), then the rest.
import probe.cli.batch_cmd  # registers commands
import probe.cli.run_cmd  # noqa: F401  (registers commands)
from probe.cli import (
    analyze_cmd,  # noqa: F401  (registers commands)
    export_cmd,  # noqa: F401  (registers commands)
    gate_cmd,  # noqa: F401  (registers commands)
    import_cmd,  # noqa: F401  (registers commands)
    report_cmd,  # noqa: F401  (registers commands)
    runs_cmd,  # noqa: F401  (registers commands)
    scan_cmd,  # noqa: F401  (registers commands)
    schema_cmd,  # noqa: F401  (registers commands)
    taxonomy_cmd,  # noqa: F401  (registers commands)
)
from probe.cli.app import app


def main() -> None:
    app()
