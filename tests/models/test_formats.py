"""Go and Kubernetes value formats used by validation: durations, Atoi, versions, DNS names, labels."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from models.formats import (
    dns1035_label_errors,
    dns1123_subdomain_errors,
    go_atoi,
    go_list,
    label_value_errors,
    parse_generic_version,
    parse_go_duration_seconds,
    qualified_name_errors,
    version_less_than,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
        (".5s", 0.5),
        ("5.s", 5.0),
        ("100ms", 0.1),
        ("-5m", -300.0),
        ("+2s", 2.0),
        ("0", 0.0),
        ("-0", 0.0),
        ("1\u00b5s", 0.000001),
    ],
)
def test_go_duration(text: str, seconds: float) -> None:
    assert parse_go_duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "value"),
    [("300", 300), ("-100", -100), ("+7", 7), (" 1", None), ("1_000", None), ("", None), ("1.0", None)],
)
def test_go_atoi(text: str, value: int | None) -> None:
    assert go_atoi(text) == value


@pytest.mark.parametrize(
    ("text", "components"),
    [("2.52.0", (2, 52, 0)), ("v2.9", (2, 9)), ("2.60.0-rc1", (2, 60, 0)), (" 2.10.1+build", (2, 10, 1))],
)
def test_generic_version(text: str, components: tuple[int, ...]) -> None:
    assert parse_generic_version(text) == components


def _parser_name(value: object) -> str | None:
    return getattr(value, "__name__", None) if callable(value) else None


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_go_duration_seconds, "300", 'time: missing unit in duration "300"'),
        (parse_go_duration_seconds, "", 'time: invalid duration ""'),
        (parse_go_duration_seconds, "-", 'time: invalid duration "-"'),
        (parse_go_duration_seconds, "invalid", 'time: invalid duration "invalid"'),
        (parse_go_duration_seconds, "5d", 'time: unknown unit "d" in duration "5d"'),
        (parse_go_duration_seconds, "1e3s", 'time: unknown unit "e" in duration "1e3s"'),
        (parse_go_duration_seconds, "9999999999h", 'time: invalid duration "9999999999h"'),
        (parse_generic_version, "invalid", 'could not parse "invalid" as version'),
        (parse_generic_version, "2", 'illegal version string "2"'),
        (parse_generic_version, "02.1", 'illegal zero-prefixed version component "02" in "02.1"'),
    ],
    ids=_parser_name,
)
def test_parse_errors_say_what_go_says(parse: Callable[[str], object], text: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        parse(text)


@pytest.mark.parametrize(
    ("version", "minimum", "less"),
    [((2, 51, 9), (2, 52, 0), True), ((2, 52), (2, 52, 0), False), ((3, 0), (2, 56, 0), False)],
)
def test_version_less_than(version: tuple[int, ...], minimum: tuple[int, ...], less: bool) -> None:
    assert version_less_than(version, minimum) is less


def test_dns1035_label() -> None:
    assert dns1035_label_errors("my-job") == []
    assert dns1035_label_errors("1job") != []
    assert dns1035_label_errors("") != []
    assert dns1035_label_errors("job-") != []
    assert dns1035_label_errors("a" * 64)[0] == "must be no more than 63 characters"


def test_dns1123_subdomain() -> None:
    assert dns1123_subdomain_errors("example.com") == []
    assert dns1123_subdomain_errors("Example.com") != []


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("app", True),
        ("example.com/app", True),
        ("a/b/c", False),
        ("/app", False),
        ("Ex.com/app", False),
        ("a!", False),
    ],
)
def test_qualified_name(key: str, valid: bool) -> None:
    assert (qualified_name_errors(key) == []) is valid


def test_qualified_name_messages() -> None:
    assert qualified_name_errors("/app") == ["prefix part must be non-empty"]
    assert qualified_name_errors("example.com/") == [
        "name part must be non-empty",
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]


@pytest.mark.parametrize(("value", "valid"), [("", True), ("v1.2_x", True), ("-x", False), ("a" * 64, False)])
def test_label_value(value: str, valid: bool) -> None:
    assert (label_value_errors(value) == []) is valid


def test_go_list() -> None:
    assert go_list(["a", "b c"]) == "[a b c]"
    assert go_list([]) == "[]"
