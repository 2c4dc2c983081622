"""Scrubbing keys from texts and URLs (probe/common/redact.py)."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from probe.common import redact
from probe.common.redact import host_port, register_secret, register_url_secrets, safe_url, scrub


def test_known_keys_are_scrubbed_wherever_they_appear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key-1234")
    register_url_secrets("https://me:url%2Fkey-5678@host/v1?api-key=query-key-9012&v=2")
    basic = base64.b64encode(b"me:url/key-5678").decode()
    text = f"echo env-key-1234 url/key-5678 url%2Fkey-5678 query-key-9012 {basic}; me, v=2"
    assert scrub(text) == "echo *** *** *** *** ***; me, v=2"  # not the user name, not a short value


def test_credential_shapes_are_scrubbed_without_known_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key known: the shapes alone (keys an earlier test in the process registered, such as one ending
    0123456789, would mask this test's digits as pieces of a key first)."""
    monkeypatch.setattr(redact, "_known_secrets", set())
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert scrub('{"Authorization": "Bearer abc.def-123456789"}') == '{"Authorization": "***"}'
    assert scrub("x-api-key: s3cr3t-value; next") == "x-api-key: ***; next"
    assert scrub("sent Bearer abcdef123456789 to") == "sent Bearer *** to"
    assert scrub("GET https://u:p@h/x?key=abc&token=t1&page=2") == "GET https://***@h/x?key=***&token=***&page=2"
    assert scrub("sk-proj-abcdefgh1234 leaked") == "*** leaked"
    assert scrub("Basic skills and Bearer bonds") == "Basic skills and Bearer bonds"  # ordinary words stay


def test_register_secret_ignores_short_values() -> None:
    register_secret("abc")
    assert scrub("abc abcd") == "abc abcd"


def test_safe_url_masks_userinfo_and_every_query_value() -> None:
    assert safe_url("https://user:key@api.example.com/v1?api-key=k&api-version=2024") == (
        "https://***@api.example.com/v1?api-key=***&api-version=***"
    )
    assert safe_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert safe_url(None) is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:9/v1", "127.0.0.1:9"),
        ("https://user:key@api.example.com/v1?api-key=k", "api.example.com:443"),
        ("http://localhost/v1", "localhost:80"),
        ("http://[::1]:8000/v1", "[::1]:8000"),
        (None, "api.openai.com:443"),
    ],
)
def test_host_port_names_the_server_never_its_credentials(url: str | None, expected: str) -> None:
    assert host_port(url) == expected


@pytest.mark.parametrize("prefix", ["", "x", "xy", '{"auth": "'])
def test_a_key_in_any_encoding_or_cut_short_is_scrubbed(prefix: str) -> None:
    key = "k3y/with+odd=chars-0123456789"
    register_secret(key)
    inside = base64.b64encode(f"{prefix}{key} and more".encode()).decode()  # the key at any base64 alignment
    encoded = base64.urlsafe_b64encode(key.encode()).decode()
    for form in (urllib.parse.quote(key, safe=""), inside, encoded, key[5:13], key[:-3], key[10:]):
        assert form not in scrub(f"echo {form}!"), form
        assert scrub(f"echo {form}!").count("***") == 1
    assert scrub(f"echo {key[5:12]}!") == f"echo {key[5:12]}!"  # 7 characters of it: ordinary text


def test_scrub_keeps_text_without_a_key_as_it_is() -> None:
    register_secret("another-key-abcdef123")
    text = "The model answered: yes. Error code 500 - upstream timeout."
    assert scrub(text) == text
