"""The tool activities' own metrics, through ``activity.metric_meter()``.

They go wherever the worker's runtime sends the SDK's metrics (the Prometheus endpoint of
``[telemetry] prometheus``) and to nowhere when it has none. Labels are the tool (a catalog name),
the error code and what was measured: never arguments or ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import timedelta

from pydantic import BaseModel
from temporalio import activity
from temporalio.common import MetricCounter, MetricMeter
from temporalio.exceptions import ApplicationError

from toolcalls.workflows.models.call import ErrorCode, prepare_activity_name

TOOL_DURATION = "toolcalls_tool_duration_seconds"
"""Histogram: how long a tool's activity ran, by ``tool`` and ``outcome`` (``completed`` or the
error code it ended with)."""
TOOL_DURATION_BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
"""Seconds: from a calculator's milliseconds to a long build."""
RESULTS_TRUNCATED = "toolcalls_results_truncated"
"""Counter: results a tool cut to its limits (its result says ``truncated``), by ``tool``."""
PAYLOADS_REFUSED = "toolcalls_payloads_refused"
"""Counter: results or previews refused as larger than the payload cap (``output_too_large``),
by ``tool`` and ``what`` (result, preview)."""
ACTIVITY_METRICS = (TOOL_DURATION, RESULTS_TRUNCATED, PAYLOADS_REFUSED)
COMPLETED = "completed"
_CODES = frozenset(code.value for code in ErrorCode)


@contextlib.contextmanager
def measured(tool: str) -> Iterator[None]:
    """Time what runs inside as one run of ``tool``, with the error code it ends with."""
    started = time.monotonic()
    outcome = COMPLETED
    try:
        yield
    except ApplicationError as err:
        # A type that is not one of ours (a library's) would be a label no one chose.
        outcome = err.type if err.type in _CODES else ErrorCode.EXECUTION_FAILED.value
        raise
    except asyncio.CancelledError:
        outcome = ErrorCode.CANCELED.value
        raise
    except BaseException:
        outcome = ErrorCode.INTERNAL.value
        raise
    finally:
        tool_ran(tool, outcome, timedelta(seconds=time.monotonic() - started))


def tool_ran(tool: str, outcome: str, elapsed: timedelta) -> None:
    """Record one run of ``tool``'s activity."""
    # Float seconds: a calculator's run is well under the millisecond a timedelta histogram keeps.
    activity.metric_meter().create_histogram_float(
        TOOL_DURATION, "Time a tool's activity ran", "s"
    ).record(elapsed.total_seconds(), {"tool": tool, "outcome": outcome})


def result_returned(tool: str, result: BaseModel) -> None:
    """Count ``result`` if the tool says it cut it (a ``truncated`` or ``*_truncated`` field)."""
    if any(value is True and _truncation(name) for name, value in result):
        _truncated(activity.metric_meter()).add(1, {"tool": tool})


def payload_refused(tool: str, what: str) -> None:
    """Count a result or preview the payload cap refused."""
    _refused(activity.metric_meter()).add(1, {"tool": tool, "what": what})


def counters_at_zero(
    meter: MetricMeter, results: Mapping[str, type[BaseModel]], prepared: Iterable[str]
) -> None:
    """Put the counters at zero for the tools whose activities this worker runs, so that the
    series exist before the first truncation or refusal (and a rule on their increase sees it).

    ``results``: each tool's result model (a tool whose model has no truncation field never counts
    one); ``prepared``: the tools with a preview step. Outside an activity: ``meter`` is the
    worker's runtime meter with the labels ``activity.metric_meter()`` adds but the activity
    type (``namespace``, ``task_queue``), so that each is the series a run later counts in.
    """
    truncated, refused = _truncated(meter), _refused(meter)
    for tool, model in results.items():
        execute = {"activity_type": tool}
        refused.with_additional_attributes(execute).add(0, {"tool": tool, "what": "result"})
        if any(_truncation(name) for name in model.model_fields):
            truncated.with_additional_attributes(execute).add(0, {"tool": tool})
    for tool in prepared:
        refused.with_additional_attributes({"activity_type": prepare_activity_name(tool)}).add(
            0, {"tool": tool, "what": "preview"}
        )


def _truncation(field: str) -> bool:
    return field == "truncated" or field.endswith("_truncated")


def _truncated(meter: MetricMeter) -> MetricCounter:
    return meter.create_counter(RESULTS_TRUNCATED, "Tool results cut to the tool's limits")


def _refused(meter: MetricMeter) -> MetricCounter:
    return meter.create_counter(PAYLOADS_REFUSED, "Results and previews refused as too large")
