"""Go's text formats that leak into what KubeRay writes for a RayJob, reproduced byte for byte.

KubeRay builds the submitter's shell command with `strconv.Quote` and `fmt.Sprintf("%f", float32)`, serializes
metadata and runtime envs with `encoding/json`, and formats times in status messages with `time.Time.String()`
or the `time.DateTime` layout. Users compare these strings (and the reference's tests pin them), so raypilot
produces the very same text. Pure standard-library code plus PyYAML's safe loader for `runtimeEnvYAML`.
"""

from __future__ import annotations

import math
import struct
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import yaml

from models.yaml_loader import StringTimestampLoader

__all__ = [
    "go_date_time",
    "go_duration",
    "go_format_float32_f",
    "go_json_marshal",
    "go_quote",
    "go_time_string",
    "load_go_yaml",
    "yaml_to_go_json",
]

_GO_SHORT_ESCAPES = {
    "\a": r"\a",
    "\b": r"\b",
    "\f": r"\f",
    "\n": r"\n",
    "\r": r"\r",
    "\t": r"\t",
    "\v": r"\v",
}


def _go_is_print(char: str) -> bool:
    # Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space only.
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def go_quote(text: str) -> str:
    """Go's `strconv.Quote`: double-quoted, with Go escapes; printable non-ASCII characters stay as they
    are."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif 0xD800 <= code <= 0xDFFF:
            # A lone surrogate is not a valid rune; Go writes the replacement character's escape.
            out.append("\\ufffd")
        elif _go_is_print(char):
            out.append(char)
        elif char in _GO_SHORT_ESCAPES:
            out.append(_GO_SHORT_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


# encoding/json escapes HTML-significant characters and the JS line separators, and (since Go 1.22)
# writes \b and \f in their short form.
_JSON_STRING_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _json_string(text: str) -> str:
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _JSON_STRING_ESCAPES:
            out.append(_JSON_STRING_ESCAPES[char])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _json_float(value: float) -> str:
    """encoding/json's float64 form: shortest round-trip digits, exponent only below 1e-6 or from 1e21."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"json: unsupported value: {value!r}")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    shortest = Decimal(repr(value))
    magnitude = abs(value)
    if 1e-6 <= magnitude < 1e21:
        text = format(shortest, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    sign, digits, exponent = shortest.normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    power = exponent + len(digits) - 1
    # Go prints at least two exponent digits, then encoding/json trims "e-07" to "e-7" (not "e+21").
    exponent_text = f"e-{-power}" if power < 0 else f"e+{power:02d}"
    return ("-" if sign else "") + mantissa + exponent_text


def go_json_marshal(value: Any) -> str:
    """`json.Marshal` of maps, slices, strings, numbers, booleans and nil: map keys sorted, no spaces."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, Mapping):
        items = sorted((str(key), item) for key, item in value.items())
        return "{" + ",".join(f"{_json_string(key)}:{go_json_marshal(item)}" for key, item in items) + "}"
    if isinstance(value, Sequence):
        return "[" + ",".join(go_json_marshal(item) for item in value) + "]"
    raise TypeError(f"json: unsupported type: {type(value).__name__}")


def _json_compatible(value: Any) -> Any:
    # sigs.k8s.io/yaml turns non-string keys into their text before encoding to JSON.
    if isinstance(value, Mapping):
        return {_key_text(key): _json_compatible(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_compatible(item) for item in value]
    return value


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float):
        return _json_float(key)
    return "null" if key is None else str(key)


def load_go_yaml(text: str) -> Any:
    """The value go-yaml decodes from `text`, with map keys as strings (raises yaml.YAMLError)."""
    return _json_compatible(yaml.load(text, Loader=StringTimestampLoader))


def yaml_to_go_json(text: str) -> str:
    """sigs.k8s.io/yaml's YAMLToJSON: the YAML document as compact JSON with sorted keys."""
    return go_json_marshal(load_go_yaml(text))


def go_format_float32_f(value: float) -> str:
    """`fmt.Sprintf("%f", float32(value))`: the float32 nearest to `value`, six decimals."""
    as_float32: float = struct.unpack("f", struct.pack("f", value))[0]
    return f"{as_float32:.6f}"


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def go_time_string(value: datetime) -> str:
    """`time.Time.String()` of a UTC time (what `%v` prints): "2006-01-02 15:04:05.999999999 +0000 UTC"."""
    utc = _utc(value)
    fraction = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
    return f"{utc:%Y-%m-%d %H:%M:%S}{fraction} +0000 UTC"


def go_date_time(value: datetime) -> str:
    """`t.Format(time.DateTime)` of a UTC time: "2006-01-02 15:04:05"."""
    return f"{_utc(value):%Y-%m-%d %H:%M:%S}"


def go_duration(seconds: int) -> str:
    """`time.Duration.String()` of a whole number of seconds: "30s", "5m0s", "1h0m0s"."""
    sign = "-" if seconds < 0 else ""
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"
