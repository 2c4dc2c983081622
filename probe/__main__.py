"""`python -m probe`: the command line, the same as the `probe` script (where no script is on PATH: a wheel
installed with --no-scripts, a checkout run as PYTHONPATH=. python -m probe)."""

from probe.cli import main

main()
