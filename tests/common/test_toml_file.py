"""A user's TOML file read within bounds (probe/common/toml_file.py): the document of a good file, and one line
naming the file for a missing, oversized, non-UTF-8, invalid or too deeply nested one (through the CLI:
test_refused_input.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe.common.errors import UserError
from probe.common.toml_file import MAX_TOML_BYTES, MAX_TOML_DEPTH, read_toml_file


def nested(levels: int) -> str:
    """A TOML document whose arrays nest `levels` deep under its table (the table itself is level 1)."""
    return "a = " + "[" * (levels - 1) + "1" + "]" * (levels - 1) + "\n"


def test_a_settings_file_reads_as_its_document(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('pairs = 4\noccupations = ["nurse", "pilot"]\n[backend]\nkind = "replay"\n')
    assert read_toml_file(path) == {"pairs": 4, "occupations": ["nurse", "pilot"], "backend": {"kind": "replay"}}
    path.write_text(nested(MAX_TOML_DEPTH))
    assert read_toml_file(path)["a"] == [[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (nested(MAX_TOML_DEPTH + 1).encode(), f"nested more than {MAX_TOML_DEPTH} levels deep"),
        (nested(2000).encode(), f"nested more than {MAX_TOML_DEPTH} levels deep"),  # tomllib's RecursionError
        (b"a = \xff\n", "not UTF-8 text (byte 4: invalid start byte); TOML files are UTF-8"),
        (b"a = [1,\n", "not valid TOML (Invalid value (at end of document))"),
        (b"#" * (MAX_TOML_BYTES + 1), "larger than 1 MiB; a settings or policy file is a few lines"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "gates.toml"
    path.write_bytes(content)
    with pytest.raises(UserError) as refused:
        read_toml_file(path)
    assert str(refused.value) == f"{path}: {message}"


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"/absent\.toml: no such file$"):
        read_toml_file(tmp_path / "absent.toml")
