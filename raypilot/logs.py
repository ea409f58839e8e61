"""The worker's logs: text (default) or one JSON object per line (`RAYPILOT_LOG_FORMAT=json`), with the
workflow id and the RayJob's or RayService's kind, namespace and name on every line logged for a workflow
or an activity, and no secrets.

Context comes from the SDK's loggers (`workflow.logger` and `activity.logger` put the workflow's or the
activity's info on each record) and, for any other logger used inside an activity (the Kubernetes and
dashboard clients, raypilot's own modules), from the running activity. The RayJob/RayService comes from the
workflow id (`rayjob/<namespace>/<name>`, docs/contract.md §3).

Secrets: every line is masked before it is written: Bearer/Basic credentials, `key=value` or `"key": "value"`
pairs whose key names a token, password, secret or API key, and the values of the secret settings
(`TEMPORAL_API_KEY`, `RAY_AUTH_TOKEN`...) found in the environment.
"""

from __future__ import annotations

import atexit
import json
import logging
import queue
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from temporalio import activity

LOG_FORMAT_VARIABLE: Final = "RAYPILOT_LOG_FORMAT"
LOG_FORMATS: Final = ("text", "json")
TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s%(raypilot_context)s"
SECRET_VARIABLES: Final = ("TEMPORAL_API_KEY", "RAY_AUTH_TOKEN", "AWS_SECRET_ACCESS_KEY")
MASK: Final = "***"

_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[^\s\"',;]+")
_SECRET_KEY = r"[\w.-]*(?:token|password|passwd|secret|api[_-]?key|credential)[\w.-]*"
_QUOTED_PAIR = re.compile(rf"(?i)(['\"]{_SECRET_KEY}['\"]\s*:\s*)(['\"])(?:(?!\2).)*\2")
_PLAIN_PAIR = re.compile(rf"(?i)(\b{_SECRET_KEY}\s*[=:]\s*)(?!['\"\s])[^\s,;&'\"}}]+")


def mask_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with credentials masked (see the module docstring)."""
    for secret in secrets:
        if len(secret) >= 4:  # a one-character "secret" would mask half of every line
            text = text.replace(secret, MASK)
    text = _BEARER.sub(lambda match: f"{match.group(1)} {MASK}", text)
    text = _QUOTED_PAIR.sub(lambda match: f"{match.group(1)}{match.group(2)}{MASK}{match.group(2)}", text)
    return _PLAIN_PAIR.sub(lambda match: f"{match.group(1)}{MASK}", text)


def ray_object(workflow_id: str) -> dict[str, str]:
    """kind, namespace and name of the RayJob/RayService a workflow id names (empty for another id)."""
    kind, _, rest = workflow_id.partition("/")
    namespace, _, name = rest.partition("/")
    if kind not in ("rayjob", "rayservice", "raycronjob") or not namespace or not name:
        return {}
    return {"ray_kind": kind, "ray_namespace": namespace, "ray_name": name}


def record_context(record: logging.LogRecord) -> dict[str, str]:
    """The workflow (and activity) a record was logged for."""
    context: dict[str, str] = {}
    info: Mapping[str, Any] | None = getattr(record, "temporal_workflow", None) or getattr(
        record, "temporal_activity", None
    )
    if info is None and activity.in_activity():
        current = activity.info()
        info = {
            "workflow_id": current.workflow_id,
            "workflow_type": current.workflow_type,
            "activity_type": current.activity_type,
        }
    if info:
        for key in ("workflow_id", "workflow_type", "run_id", "workflow_run_id", "activity_type", "attempt"):
            if info.get(key) not in (None, ""):
                context[key] = str(info[key])
        context.update(ray_object(context.get("workflow_id", "")))
    return context


class ContextFilter(logging.Filter):
    """Puts the workflow context on each record (`record.raypilot`) and masks secrets in its message."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = tuple(secret for secret in secrets if secret)

    def filter(self, record: logging.LogRecord) -> bool:
        context = record_context(record)
        shown = {
            key: value for key, value in context.items() if key.startswith("ray_") or key == "workflow_id"
        }
        record.raypilot = context
        record.raypilot_context = "".join(f" {key}={value}" for key, value in shown.items())
        message = mask_secrets(record.getMessage(), self.secrets)
        if record.exc_info:
            message += "\n" + mask_secrets(logging.Formatter().formatException(record.exc_info), self.secrets)
            record.exc_info = None
            record.exc_text = None
        record.msg, record.args = message, None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the workflow context."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(getattr(record, "raypilot", {}))
        return json.dumps(line, ensure_ascii=False)


def secret_values(env: Mapping[str, str]) -> list[str]:
    return [env[name] for name in SECRET_VARIABLES if env.get(name)]


def log_handler(log_format: str, env: Mapping[str, str]) -> logging.Handler:
    """A stderr handler in that format (`text` or `json`) that adds context and masks secrets."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"{LOG_FORMAT_VARIABLE}={log_format!r}: expected one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler()
    handler.addFilter(ContextFilter(secret_values(env)))
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    return handler


class HandOff(logging.Handler):
    """Hands records to a queue that one writer thread writes out, and takes no lock.

    Why: the SDK interrupts a workflow thread that has not yielded for 2 s (its deadlock detection) by raising
    an exception inside it. On a starved worker (P7: 10,000 RayJobs on 2 cores) it did so hundreds of times,
    and once the exception landed between a stream handler's `acquire()` and its `try`: the lock stayed held
    and every later log call of the worker blocked, the worker frozen for good. `SimpleQueue.put` is one
    atomic call; the filters (context, masking) still run here, in the logging thread, which they need."""

    def __init__(
        self, records: queue.SimpleQueue[logging.LogRecord | None], finish: Callable[[], None] | None = None
    ) -> None:
        super().__init__()
        self.records = records
        self._finish = finish

    def createLock(self) -> None:
        self.lock = None

    def emit(self, record: logging.LogRecord) -> None:
        self.records.put(record)

    def close(self) -> None:
        """Waits (bounded) for the writer to write what is left. `logging.shutdown()` closes handlers, and
        a process that ends with `os._exit` (the console script: raypilot/cli/main.py) runs no atexit hook:
        without this, a worker refusing a bad setting would exit without its error line."""
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()
        super().close()


# How long the exit waits for the writer to write what is left (a stuck writer must not hang the exit).
WRITER_EXIT_SECONDS: Final = 5.0


def handed_off(handler: logging.Handler) -> HandOff:
    """A `HandOff` for `handler`, whose filters it takes over; one writer thread (a daemon) writes what it is
    handed, and at exit (or once the handler is closed) writes what is left for up to WRITER_EXIT_SECONDS."""
    records: queue.SimpleQueue[logging.LogRecord | None] = queue.SimpleQueue()

    def write() -> None:
        while (record := records.get()) is not None:
            handler.handle(record)

    writer = threading.Thread(target=write, name="raypilot-log-writer", daemon=True)

    def finish() -> None:
        records.put(None)
        writer.join(WRITER_EXIT_SECONDS)

    front = HandOff(records, finish)
    for handed in list(handler.filters):
        front.addFilter(handed)
        handler.removeFilter(handed)
    writer.start()
    atexit.register(front.close)
    return front


def configure_logging(env: Mapping[str, str], level: int = logging.INFO) -> None:
    """The worker's root logger: one handler in the format of RAYPILOT_LOG_FORMAT, written by its own thread
    (`HandOff`)."""
    log_format = env.get(LOG_FORMAT_VARIABLE, "text").strip().lower() or "text"
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(handed_off(log_handler(log_format, env)))
    root.setLevel(level)
    context_as_fields()


def context_as_fields(on: bool = True) -> None:
    """The context is a field of its own: stop the SDK's loggers appending it to every message as a dict
    (`on=False` restores that)."""
    from temporalio import workflow

    workflow.logger.workflow_info_on_message = not on
    activity.logger.activity_info_on_message = not on
