"""Taxonomy-grounded gender-bias probing of language models (after Zhang, "Taxonomy-based CheckList")."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("taxonomy-probe")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
