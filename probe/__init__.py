"""Taxonomy-grounded gender-bias probing of language models (after Zhang, "Taxonomy-based CheckList")."""

from probe.common.version import __version__

__all__ = ["Run", "Scan", "__version__", "gate", "open_run", "open_scan", "run", "scan"]


def __getattr__(name: str) -> object:
    """probe.run, probe.open_run, probe.Run, probe.scan, probe.open_scan, probe.Scan, probe.gate (probe/api.py),
    imported on first use: `import probe` stays light."""
    if name in ("Run", "Scan", "gate", "open_run", "open_scan", "run", "scan"):
        from probe import api

        return getattr(api, name)
    raise AttributeError(f"module 'probe' has no attribute {name!r}")
