"""Counters at zero from the start: the error, truncation and refusal counters of the tools the
worker serves.

A Prometheus counter that appears only when it first counts has no earlier sample, so
``increase()`` and ``rate()`` miss that first count and an alert on it never fires. The worker
creates these series at zero once it connects, with the labels the SDK's workflow and activity
meters will add (``namespace``, ``task_queue``, ``workflow_type`` or ``activity_type``), so that
a later count moves the same series. Their ``tool`` label values are the deployment's tools.
"""

from __future__ import annotations

from collections.abc import Iterable

from temporalio.client import Client
from temporalio.runtime import Runtime

from toolcalls.activities import telemetry as activity_metrics
from toolcalls.activities.spec import ToolSpec
from toolcalls.workflows.call import telemetry as workflow_metrics
from toolcalls.workflows.models.call import WORKFLOW_NAME


def counters_at_zero(
    client: Client, task_queue: str, *, calls: Iterable[str], runs: Iterable[ToolSpec]
) -> None:
    """Create the counters at zero on ``client``'s runtime: call errors for ``calls`` (the
    enabled tools, where the worker runs the workflow on ``task_queue``), truncated results and
    refused payloads for ``runs`` (the tools whose activities it runs there)."""
    runtime = client.service_client.config.runtime or Runtime.default()
    meter = runtime.metric_meter.with_additional_attributes(
        {"namespace": client.namespace, "task_queue": task_queue}
    )
    workflow_metrics.errors_at_zero(
        meter.with_additional_attributes({"workflow_type": WORKFLOW_NAME}), calls
    )
    specs = list(runs)
    activity_metrics.counters_at_zero(
        meter,
        {spec.name: spec.result for spec in specs},
        [spec.name for spec in specs if spec.has_prepare],
    )
