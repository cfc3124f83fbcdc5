"""Log lines for people (``log_format = "text"``, the default) or for log search (``"json"``).

A JSON line is one object: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, the
call's fields where the line is about one call (``call_id``, ``workflow_id``, ``tool``,
``status``, ``error_code``), the SDK's workflow or activity details (``temporal_workflow``,
``temporal_activity``) and ``exception`` (the traceback) when there is one. The SDK's loggers add
their details to the record's extra; in JSON they are fields, so they are not repeated in the
message.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from temporalio import activity, workflow

from toolcalls.worker.telemetry.settings import LogFormat

CALL_FIELDS = (
    "call_id",
    "workflow_id",
    "tool",
    "status",
    "error_code",
    "decision",
    "rules",
    "shadow",
    "principal",
    "digest",
)
"""A record's extra keys that become fields of their own."""
SDK_FIELDS = ("temporal_workflow", "temporal_activity")
"""The dicts the SDK's ``workflow.logger`` and ``activity.logger`` add to a record."""
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in SDK_FIELDS:
            details = getattr(record, key, None)
            if isinstance(details, dict):
                line[key] = details
        for key in CALL_FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                line[key] = value
        if "workflow_id" not in line:
            # A line the SDK logged inside a workflow or an activity still names its workflow.
            for key in SDK_FIELDS:
                workflow_id = line.get(key, {}).get("workflow_id")
                if workflow_id:
                    line["workflow_id"] = workflow_id
                    break
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(level: str | int, log_format: LogFormat = LogFormat.TEXT) -> None:
    """Set the root logger's level and the format of its stderr handler."""
    handler = logging.StreamHandler()
    if log_format is LogFormat.JSON:
        handler.setFormatter(JsonFormatter())
        # The details are fields of their own: appended to the message too, they would only make
        # the message harder to search.
        workflow.logger.workflow_info_on_message = False
        activity.logger.activity_info_on_message = False
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
