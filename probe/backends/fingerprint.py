"""What identifies a model in the answer cache: the sha256 of its weights, or its hub revision."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf")


def file_sha256(path: Path, cache_file: Path | None = None) -> str:
    """sha256 of the file, remembered by (path, mtime, size) so that a model file is hashed once."""
    cache_file = cache_file or cache_dir() / "sha256.json"
    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_mtime_ns}|{stat.st_size}"
    try:
        known = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    known[key] = digest.hexdigest()
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text(json.dumps(known, indent=1))
    except OSError:
        pass  # a read-only home only costs a re-hash next time
    return known[key]


def cache_dir() -> Path:
    """Where model-derived files (hashes, converted GGUFs) are kept between runs: $XDG_CACHE_HOME/taxonomy-probe."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "taxonomy-probe"


def model_fingerprint(model: str, revision: str | None) -> dict[str, object]:
    """A local folder: the sha256 of each weight file; a hub id: the commit transformers loaded."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        weights = sorted(path for path in folder.iterdir() if path.name.endswith(WEIGHT_SUFFIXES))
        return {"weights_sha256": {path.name: file_sha256(path) for path in weights}}
    return {"revision": revision}
