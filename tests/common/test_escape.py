"""Escaping helpers, the atomic write and user-text checks: hostile strings come out literal or are refused,
files appear whole or not at all."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pandas as pd
import pytest
from rich.table import Table

from probe.common.errors import UserError
from probe.common.escape import (
    atomic_path,
    csv_cell,
    csv_safe,
    literal_console,
    markdown_text,
    page_text,
    write_atomic,
)
from probe.common.user_text import checked_text


def test_page_text_escapes_controls_and_bidi_overrides_and_keeps_text() -> None:
    assert page_text("m\x1b]0;pwned\x07\x1b[2J\u202e") == "m\\x1b]0;pwned\\x07\\x1b[2J\\u202e"
    # tabs, line breaks, no-break spaces, joiners (emoji, Persian) and combining marks are text on a page
    kept = (
        "a\tb\r\nAna\xa0Mar\u00eda \U0001f469\u200d\U0001f4bb \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 e\u0301"
    )
    assert page_text(kept) == kept


def test_markdown_text_escapes_markup_html_and_table_syntax() -> None:
    assert markdown_text("<img src=x onerror=alert(1)>") == r"\<img src=x onerror=alert(1)>"
    assert markdown_text("*a* | [b](c) `d` #e ~~f~~ [g]: h") == r"\*a\* \| [b\](c) \`d\` #e \~\~f\~\~ [g\]: h"
    assert markdown_text("a\nb\r\n# c") == "a b # c"  # a newline cannot start a heading: it is a space now
    assert markdown_text("Chief\x1b]0;x\x07 \u202eExecutives") == r"Chief\x1b]0;x\x07 \u202eExecutives"
    assert markdown_text("&amp; x_y _z __init__ R&D") == r"\&amp; x_y \_z \_\_init\_\_ R&D"
    assert markdown_text(r"C:\dir \*") == r"C:\dir \\\*"  # a backslash is escaped only where it would escape
    assert markdown_text("nurse") == "nurse"
    # plain text stays plain: periods, parentheses, hyphens and ! mean nothing in the middle of a line
    assert markdown_text("69.8% (12 pairs), release-candidate!") == "69.8% (12 pairs), release-candidate!"
    assert markdown_text("bias 50.0% [19.0, 81.0], q < 0.05, decided_by=replay") == (
        "bias 50.0% [19.0, 81.0], q < 0.05, decided_by=replay"
    )
    # at the start of a line they can: a heading, a list item, an ordered list, a setext underline
    assert [markdown_text(text) for text in ("# title", "- item", "+ item", "12. item", "3) item", "===", "---")] == [
        r"\# title",
        r"\- item",
        r"\+ item",
        r"12\. item",
        r"3\) item",
        r"\===",
        r"\---",
    ]
    assert markdown_text("> quote, a > b") == r"\> quote, a > b"
    assert [markdown_text(text) for text in ("-5.0 points", "#3", "2.5x")] == ["-5.0 points", "#3", "2.5x"]
    assert markdown_text(3) == "3"


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("nurse", "nurse"),
        ("a=b", "a=b"),
        ("", ""),
        (-1.5, -1.5),
        (None, None),
    ],
)
def test_csv_cell_neutralises_formula_starts_only(cell: object, expected: object) -> None:
    assert csv_cell(cell) == expected


def test_csv_safe_neutralises_text_columns_and_keeps_numbers(tmp_path: Path) -> None:
    frame = pd.DataFrame({"occupation": ["=1+1", "pilot", None], "value": [-1, 2, 3]})
    safe = csv_safe(frame)
    assert safe["occupation"].tolist()[:2] == ["'=1+1", "pilot"]
    assert pd.isna(safe["occupation"].iloc[2])
    assert safe["value"].tolist() == [-1, 2, 3]
    assert frame["occupation"].iloc[0] == "=1+1"  # the input is not modified
    safe.to_csv(tmp_path / "x.csv", index=False)
    assert (tmp_path / "x.csv").read_text().splitlines() == ["occupation,value", "'=1+1,-1", "pilot,2", ",3"]


def test_literal_console_prints_markup_emoji_codes_and_tables_as_typed() -> None:
    console = literal_console()
    console.file, console.record, console.width = io.StringIO(), True, 60
    console.print("[bold red]x[/ :smile:")
    table = Table(title="[i]run[/i]")
    table.add_column("occupation")
    table.add_row("[bold red]x[/")
    console.print(table)
    assert console.export_text().splitlines() == [
        "[bold red]x[/ :smile:",
        "   [i]run[/i]    ",
        "┏━━━━━━━━━━━━━━━┓",
        "┃ occupation    ┃",
        "┡━━━━━━━━━━━━━━━┩",
        "│ [bold red]x[/ │",
        "└───────────────┘",
    ]


def test_write_atomic_replaces_whole_file_with_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "report.html"
    write_atomic(target, "first")
    write_atomic(target, "second é")
    assert target.read_text(encoding="utf-8") == "second é"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


def test_atomic_path_leaves_old_file_and_no_temporary_when_writer_fails(tmp_path: Path) -> None:
    target = tmp_path / "answers.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("half a fi")
        raise RuntimeError("crash mid-write")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.csv"]


def test_checked_text_normalises_to_nfc_and_refuses_invisible_characters() -> None:
    decomposed = "Cafe\u0301 owner"
    assert checked_text(decomposed, "x") == "Caf\u00e9 owner"
    assert checked_text("Zo\u00eb", "x") == "Zo\u00eb"
    for invisible, name in (("\u200d", "ZERO WIDTH JOINER"), ("\u2066", "LEFT-TO-RIGHT ISOLATE"), ("\x07", "unnamed")):
        # the message shows the character escaped (repr), so the error line itself is not reordered or hidden
        kind = "a control character" if invisible == "\x07" else "an invisible format character"
        with pytest.raises(UserError) as raised:
            checked_text(f"Ann{invisible}a", "names.csv line 3")
        assert str(raised.value) == (
            f"names.csv line 3: {f'Ann{invisible}a'!r} contains {kind}, U+{ord(invisible):04X} {name}; remove it"
        )
