"""Taxonomy-grounded gender-bias probing of language models (after Zhang, "Taxonomy-based CheckList")."""

from probe.common.version import __version__

__all__ = ["Run", "__version__", "open_run", "run"]


def __getattr__(name: str) -> object:
    """probe.run, probe.open_run, probe.Run (probe/api.py), imported on first use: `import probe` stays light."""
    if name in ("Run", "open_run", "run"):
        from probe import api

        return getattr(api, name)
    raise AttributeError(f"module 'probe' has no attribute {name!r}")
