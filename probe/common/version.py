"""The package version, in a module of its own so any module can import it without importing the package API."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("taxonomy-probe")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
