"""Kubernetes and Go value formats that KubeRay's validation relies on, with their exact error texts.

DNS names, label keys and values (k8s.io/apimachinery/pkg/util/validation), Go's time.ParseDuration,
strconv.Atoi, %q and %v of a string slice, and k8s version.ParseGeneric.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from fractions import Fraction

__all__ = [
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "go_atoi",
    "go_list",
    "go_quote",
    "label_value_errors",
    "parse_generic_version",
    "parse_go_duration_seconds",
    "qualified_name_errors",
    "version_less_than",
]

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_EXAMPLES = ("MyName", "my.name", "123-abc")
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_MAX = 63
_SUBDOMAIN_MAX = 253


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _regex_error(message: str, regex: str, *examples: str) -> str:
    # apimachinery's RegexError, including its double space before " or ".
    if not examples:
        return f"{message} (regex used for validation is '{regex}')"
    listed = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {listed}regex used for validation is '{regex}')"


def _matches(regex: str, value: str) -> bool:
    # Go's regexp "$" only matches at the very end (no trailing-newline allowance), hence fullmatch.
    return re.fullmatch(regex, value) is not None


def dns1035_label_errors(value: str) -> list[str]:
    errors = [_max_len_error(_LABEL_MAX)] if len(value) > _LABEL_MAX else []
    if not _matches(_DNS1035_LABEL_FMT, value):
        errors.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errors


def dns1123_label_errors(value: str) -> list[str]:
    errors = [_max_len_error(_LABEL_MAX)] if len(value) > _LABEL_MAX else []
    if not _matches(_DNS1123_LABEL_FMT, value):
        errors.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors = [_max_len_error(_SUBDOMAIN_MAX)] if len(value) > _SUBDOMAIN_MAX else []
    if not _matches(_DNS1123_SUBDOMAIN_FMT, value):
        errors.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """Errors of a label key ("[prefix/]name")."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {message}" for message in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, *_QUALIFIED_NAME_EXAMPLES)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > _LABEL_MAX:
        errors.append("name part " + _max_len_error(_LABEL_MAX))
    if not _matches(_QUALIFIED_NAME_FMT, name):
        examples = _QUALIFIED_NAME_EXAMPLES
        errors.append("name part " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, *examples))
    return errors


def label_value_errors(value: str) -> list[str]:
    errors = [_max_len_error(_LABEL_MAX)] if len(value) > _LABEL_MAX else []
    if not _matches(_LABEL_VALUE_FMT, value):
        errors.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def go_quote(value: str) -> str:
    """Go's %q for the strings that appear in these messages (JSON escaping matches it for them)."""
    return json.dumps(value, ensure_ascii=False)


def go_list(items: Iterable[str]) -> str:
    """Go's %v of a []string: "[a b c]"."""
    return "[" + " ".join(items) + "]"


_ATOI = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = 2**63 - 1


def go_atoi(text: str) -> int | None:
    """strconv.Atoi: an optionally signed decimal (no spaces, no underscores) in int64 range, else None."""
    if not _ATOI.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64_MAX - 1 <= value <= _INT64_MAX else None


_DURATION_UNITS_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def parse_go_duration_seconds(text: str) -> float:
    """time.ParseDuration ("1h30m", "-5m", "1.5s", "0"), in seconds; ValueError when Go rejects it."""
    rest = text
    negative = rest[:1] == "-"
    if rest[:1] in "+-":
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ValueError(f"time: invalid duration {go_quote(text)}")
    total_ns = Fraction(0)
    while rest:
        match = _DURATION_PART.match(rest)
        if match is None or match.end() == 0:
            raise ValueError(f"time: invalid duration {go_quote(text)}")
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            raise ValueError(f"time: invalid duration {go_quote(text)}")
        if not unit:
            raise ValueError(f"time: missing unit in duration {go_quote(text)}")
        if unit not in _DURATION_UNITS_NS:
            raise ValueError(f"time: unknown unit {go_quote(unit)} in duration {go_quote(text)}")
        amount = Fraction(int(whole or "0"))
        if fraction:
            amount += Fraction(int(fraction), 10 ** len(fraction))
        total_ns += amount * _DURATION_UNITS_NS[unit]
        if total_ns > _INT64_MAX + (1 if negative else 0):
            raise ValueError(f"time: invalid duration {go_quote(text)}")
        rest = rest[match.end() :]
    seconds = float(total_ns / 1_000_000_000)
    return -seconds if negative else seconds


_GENERIC_VERSION = re.compile(r"[ \t\n\f\r]*v?([0-9]+(?:\.[0-9]+)*)(.*)")


def parse_generic_version(text: str) -> tuple[int, ...]:
    """k8s version.ParseGeneric: at least "major.minor", anything may follow; ValueError with Go's text."""
    match = _GENERIC_VERSION.fullmatch(text)
    if match is None:
        raise ValueError(f"could not parse {go_quote(text)} as version")
    components = match.group(1).split(".")
    if len(components) < 2:
        raise ValueError(f"illegal version string {go_quote(text)}")
    if components[0].startswith("0") and components[0] != "0":
        leading = go_quote(components[0])
        raise ValueError(f"illegal zero-prefixed version component {leading} in {go_quote(text)}")
    return tuple(int(component) for component in components)


def version_less_than(version: tuple[int, ...], minimum: tuple[int, ...]) -> bool:
    """Component-wise comparison, missing components counting as 0 (k8s Version.LessThan, no pre-release)."""
    width = max(len(version), len(minimum))
    padded = version + (0,) * (width - len(version))
    padded_minimum = minimum + (0,) * (width - len(minimum))
    return padded < padded_minimum
