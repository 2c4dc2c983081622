"""Taxonomy-grounded gender-bias probing of language models (after Zhang, "Taxonomy-based CheckList")."""

from probe.common.version import __version__

# in probe/api.py
_API = ("Run", "Scan", "gate", "import_decisions", "import_run", "open_run", "open_scan", "run", "scan", "schema")
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> object:
    """probe.run, probe.open_run, probe.Run, probe.scan, probe.open_scan, probe.Scan, probe.gate, probe.import_run,
    probe.import_decisions, probe.schema (probe/api.py), imported on first use: `import probe` stays light."""
    if name in _API:
        from probe import api

        return getattr(api, name)
    raise AttributeError(f"module 'probe' has no attribute {name!r}")
