"""The demo's Kubernetes-native front door: it installs the `raypilot.io` CRDs (generated from the models, as
`raypilot crds` prints them) and shows what `kubectl get rayjobs.raypilot.io -w` shows, a row each time the
object's printed columns change, rendered from the CRD's own printer columns (no kubectl needed)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kubernetes import client as k8s

from models.crd import KINDS, PRINTER_COLUMNS, custom_resource_definition
from raypilot.cli.render import parse_time


def install_crds(api_client: k8s.ApiClient) -> None:
    """Creates the raypilot.io CRDs (already there: left as they are)."""
    extensions: Any = k8s.ApiextensionsV1Api(api_client)
    for kind in KINDS:
        try:
            extensions.create_custom_resource_definition(custom_resource_definition(kind))
        except k8s.ApiException as error:
            if error.status != 409:
                raise


def _field(obj: Mapping[str, Any], json_path: str) -> Any:
    value: Any = obj
    for part in json_path.strip(".").split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def kubectl_age(seconds: float) -> str:
    """kubectl's short durations: 45s, 3m12s, 12m, 5h."""
    whole = max(int(seconds), 0)
    if whole < 120:
        return f"{whole}s"
    if whole < 600:
        return f"{whole // 60}m{whole % 60}s"
    if whole < 3 * 3600:
        return f"{whole // 60}m"
    return f"{whole // 3600}h"


def printed_columns(kind: str, obj: Mapping[str, Any], now: datetime) -> list[str]:
    """NAME and the CRD's printer columns of `obj` as kubectl prints them (<none> for what is unset)."""
    row = [str(_field(obj, ".metadata.name") or "")]
    for column in PRINTER_COLUMNS[kind]:
        value = _field(obj, column.json_path)
        if column.type == "date":
            created = parse_time(value) if value else None
            row.append(kubectl_age((now - created).total_seconds()) if created else "<unknown>")
        else:
            row.append("<none>" if value in (None, "") else str(value))
    return row


def header(kind: str) -> list[str]:
    return ["NAME", *(column.name.upper() for column in PRINTER_COLUMNS[kind])]


# Widths that fit the demo's values, so that the rows printed one by one line up as kubectl's do.
_MIN_WIDTH = 12


def table_line(cells: list[str], widths: list[int]) -> str:
    return "   ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()


class KubectlWatch:
    """Prints the `kubectl get KIND -w` header once, then a row whenever the columns other than AGE change."""

    def __init__(self, kind: str, emit: Callable[[str], None], prefix: str = "  ") -> None:
        self.kind, self.emit, self.prefix = kind, emit, prefix
        names = header(kind)
        self.widths = [max(len(name), _MIN_WIDTH) for name in names]
        self.widths[0] = max(self.widths[0], 16)
        self.last: list[str] | None = None
        self.rows = 0

    def start(self, command: str) -> None:
        self.emit(f"{self.prefix}$ {command}")
        self.emit(self.prefix + table_line(header(self.kind), self.widths))

    def show(self, obj: Mapping[str, Any] | None, now: datetime) -> None:
        if obj is None:
            return
        row = printed_columns(self.kind, obj, now)
        if self.last is not None and row[:-1] == self.last[:-1]:
            return
        self.last = row
        self.rows += 1
        self.widths = [max(width, len(cell)) for width, cell in zip(self.widths, row, strict=True)]
        self.emit(self.prefix + table_line(row, self.widths))
