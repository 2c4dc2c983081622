"""Where the curated data (taxonomy/) and prompt templates (prompts/) live.

A wheel carries them under probe/_bundled/; an editable install or a source checkout reads them from the
repository root, so there is one copy of each file.
"""

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # probe/ (this module is probe/common/resources.py)


def resource_dir(name: str) -> Path:
    """Return the directory of bundled resource `name` ("taxonomy" or "prompts")."""
    bundled = _PACKAGE_DIR / "_bundled" / name
    if bundled.is_dir():
        return bundled
    return _PACKAGE_DIR.parent / name
