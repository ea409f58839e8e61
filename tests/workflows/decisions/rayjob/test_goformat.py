"""Go text formats KubeRay's RayJob strings depend on (strconv.Quote, encoding/json, %f, time)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from workflows.decisions.rayjob.goformat import (
    go_date_time,
    go_duration,
    go_format_float32_f,
    go_json_marshal,
    go_quote,
    go_time_string,
    yaml_to_go_json,
)


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ('{"test":"test"}', '"{\\"test\\":\\"test\\"}"'),
        ('{"Custom_1": 1, "Custom_2": 5.5}', '"{\\"Custom_1\\": 1, \\"Custom_2\\": 5.5}"'),
        ("Waiting at http://x ...", '"Waiting at http://x ..."'),
        ("back\\slash", '"back\\\\slash"'),
        ("tab\tnew\nline\r", '"tab\\tnew\\nline\\r"'),
        ("bell\a vt\v ff\f bs\b", '"bell\\a vt\\v ff\\f bs\\b"'),
        ("nul\x00 esc\x1b del\x7f", '"nul\\x00 esc\\x1b del\\x7f"'),
        ("héllo 日本", '"héllo 日本"'),  # printable non-ASCII is kept
        ("nbsp\u00a0 soft\u00ad", '"nbsp\\u00a0 soft\\u00ad"'),  # spaces and format chars are escaped
        ("emoji \U0001f600 private \U000f0000", '"emoji \U0001f600 private \\U000f0000"'),
        ("", '""'),
    ],
)
def test_go_quote_matches_strconv_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ({"testKey": "testValue"}, '{"testKey":"testValue"}'),
        ({"b": 1, "a": [True, None, "x"]}, '{"a":[true,null,"x"],"b":1}'),  # keys sorted, no spaces
        ({"html": "<a href='x'>&</a>"}, '{"html":"\\u003ca href=\'x\'\\u003e\\u0026\\u003c/a\\u003e"}'),
        ("ctl\x01\b\f\n\u2028", '"ctl\\u0001\\b\\f\\n\\u2028"'),
        (1.0, "1"),
        (5.5, "5.5"),
        (0.1, "0.1"),
        (-0.0, "-0"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (123456789.125, "123456789.125"),
    ],
)
def test_go_json_marshal_matches_encoding_json(value: object, encoded: str) -> None:
    assert go_json_marshal(value) == encoded


def test_go_json_marshal_rejects_nan() -> None:
    with pytest.raises(ValueError, match="unsupported value"):
        go_json_marshal(float("nan"))


@pytest.mark.parametrize(
    ("yaml_text", "json_text"),
    [
        ("test: test", '{"test":"test"}'),
        (
            'working_dir: "https://example.com/a.zip"\npip: ["python-multipart==0.0.6"]\n',
            '{"pip":["python-multipart==0.0.6"],"working_dir":"https://example.com/a.zip"}',
        ),
        ("env_vars:\n  N: 1\n  F: 1.0\n  B: true\n", '{"env_vars":{"B":true,"F":1,"N":1}}'),
        ("date: 2001-12-14", '{"date":"2001-12-14"}'),  # timestamps stay strings, as with go-yaml
        ("1: one\nfalse: yes", '{"1":"one","false":true}'),  # non-string keys become text
        ("", "null"),
    ],
)
def test_yaml_to_go_json(yaml_text: str, json_text: str) -> None:
    assert yaml_to_go_json(yaml_text) == json_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1, "1.000000"),
        (0.5, "0.500000"),
        (0.1, "0.100000"),
        (16777217.0, "16777216.000000"),
        (2.25, "2.250000"),
    ],
)
def test_go_format_float32_f(value: float, text: str) -> None:
    # 16777217 has no float32 representation: Go formats the nearest float32, 16777216.
    assert go_format_float32_f(value) == text


def test_go_time_formats() -> None:
    moment = datetime(2024, 5, 1, 9, 8, 7, tzinfo=UTC)
    assert go_time_string(moment) == "2024-05-01 09:08:07 +0000 UTC"
    assert go_time_string(moment.replace(microsecond=120000)) == "2024-05-01 09:08:07.12 +0000 UTC"
    assert go_date_time(moment.replace(microsecond=999999)) == "2024-05-01 09:08:07"


@pytest.mark.parametrize(
    ("seconds", "text"), [(30, "30s"), (0, "0s"), (90, "1m30s"), (300, "5m0s"), (3600, "1h0m0s")]
)
def test_go_duration(seconds: int, text: str) -> None:
    assert go_duration(seconds) == text
