"""What the reliability suite produced, kept for the secret scan (S6): every workflow history (as exported
JSON), every workflow's search attributes, every log line, and the secret values in play."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import WorkflowHandle

_PAYLOAD_DATA = re.compile(r'"data": "([A-Za-z0-9+/]+={0,2})"')


def readable(history_json: str) -> str:
    """An exported history with every payload's data decoded too (the export carries payloads in base64,
    where a plain search would miss a secret)."""
    decoded = []
    for match in _PAYLOAD_DATA.finditer(history_json):
        try:
            decoded.append(base64.b64decode(match.group(1)).decode("utf-8", errors="replace"))
        except (binascii.Error, ValueError):
            continue
    return "\n".join([history_json, *decoded])


@dataclass
class Ledger:
    histories: dict[str, str] = field(default_factory=dict)  # "<workflow id>@<run id>" -> history JSON
    search_attributes: dict[str, str] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)

    async def record(self, handle: WorkflowHandle[Any, Any]) -> None:
        """Keep the history and search attributes of every run of this workflow id."""
        client = handle._client  # the handle's own client: the workflow may be on another dev server
        async for execution in client.list_workflows(f'WorkflowId = "{handle.id}"'):
            key = f"{execution.id}@{execution.run_id}"
            run = client.get_workflow_handle(execution.id, run_id=execution.run_id)
            self.histories[key] = readable((await run.fetch_history()).to_json())
            described = await run.describe()
            self.search_attributes[key] = json.dumps(
                {pair.key.name: pair.value for pair in described.typed_search_attributes}, default=str
            )

    def findings(self) -> list[str]:
        """Where any secret value appears (empty when none does)."""
        places = [
            *(("history " + key, text) for key, text in self.histories.items()),
            *(("search attributes " + key, text) for key, text in self.search_attributes.items()),
            *(("log line", line) for line in self.logs),
        ]
        return [
            f"{where}: {secret[:6]}..." for where, text in places for secret in self.secrets if secret in text
        ]
