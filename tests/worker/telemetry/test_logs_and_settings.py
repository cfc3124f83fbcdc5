"""``log_format``, ``[telemetry]`` and their flags; the JSON formatter on real log records."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio import activity, workflow

from tests.worker.support import TOOLCALLS, one_line, run, write_config
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.worker.telemetry.logs import JsonFormatter, configure_logging
from toolcalls.worker.telemetry.settings import LogFormat


def test_the_defaults_are_text_logs_and_no_endpoint() -> None:
    config = parse_config({})
    assert config.log_format is LogFormat.TEXT
    assert config.telemetry.prometheus is None
    assert config.telemetry.service_name == "toolcalls"
    chosen = parse_config(
        {
            "log_format": "json",
            "telemetry": {"prometheus": "0.0.0.0:9464", "service_name": "tools-eu"},
        }
    )
    assert chosen.log_format is LogFormat.JSON
    assert chosen.telemetry.prometheus == "0.0.0.0:9464"
    assert chosen.telemetry.service_name == "tools-eu"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"telemetry": {"prometheus": "9464"}}, "telemetry.prometheus: '9464' is not HOST:PORT"),
        ({"telemetry": {"prometheus": "h:99999"}}, "telemetry.prometheus: 'h:99999' is not HOST:"),
        ({"telemetry": {"port": 1}}, "telemetry.port: unknown key"),
        ({"telemetry": {"service_name": ""}}, "telemetry.service_name: String should have at"),
        ({"telemetry": {"service_name": "x" * 101}}, "telemetry.service_name: String should have"),
        ({"log_format": "xml"}, "log_format: Input should be 'text' or 'json'"),
    ],
)
def test_bad_settings_name_their_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert message in str(info.value)


def test_a_bad_metrics_flag_is_a_usage_error(tmp_path: Path) -> None:
    done = run([TOOLCALLS, "worker", "--metrics", "nowhere"], tmp_path)
    assert done.returncode == 2
    assert "argument --metrics: 'nowhere' is not HOST:PORT" in done.stderr
    done = run([TOOLCALLS, "worker", "--log-format", "xml"], tmp_path)
    assert done.returncode == 2
    assert "--log-format: invalid choice: 'xml'" in done.stderr


def test_a_metrics_port_in_use_stops_startup_naming_it(tmp_path: Path) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        config = write_config(tmp_path, f'[telemetry]\nprometheus = "127.0.0.1:{port}"\n')
        done = run([TOOLCALLS, "worker", "--config", str(config)], tmp_path)
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(f"toolcalls: cannot serve metrics on 127.0.0.1:{port}")


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The root logger as ``configure_logging`` leaves it, writing to a buffer."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    on_message = workflow.logger.workflow_info_on_message, activity.logger.activity_info_on_message
    configure_logging("INFO", LogFormat.JSON)
    stream = io.StringIO()
    [handler] = root.handlers
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    yield stream
    root.handlers, root.level = saved
    workflow.logger.workflow_info_on_message, activity.logger.activity_info_on_message = on_message


def test_json_lines_carry_the_call_fields(captured: io.StringIO) -> None:
    log = logging.getLogger("toolcalls.test")
    log.info(
        "calculator call c1 failed: %s",
        "execution_failed",
        extra={"tool": "calculator", "call_id": "c1", "workflow_id": "w1", "error_code": "e"},
    )
    log.warning('plain line with "quotes"\nand a newline')
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("it broke")
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    assert len(lines) == 3  # one line per record, whatever the message holds
    first = lines[0]
    assert first["message"] == "calculator call c1 failed: execution_failed"
    assert (first["tool"], first["call_id"], first["workflow_id"], first["error_code"]) == (
        "calculator",
        "c1",
        "w1",
        "e",
    )
    assert first["level"] == "INFO"
    assert first["logger"] == "toolcalls.test"
    assert first["time"].endswith("+00:00")
    assert "status" not in first
    assert lines[1]["message"] == 'plain line with "quotes"\nand a newline'
    assert "ValueError: boom" in lines[2]["exception"]


def test_json_lines_take_the_sdk_details_as_fields(captured: io.StringIO) -> None:
    details = {"workflow_id": "w2", "run_id": "r", "workflow_type": "ToolCallWorkflow"}
    logging.getLogger("temporalio.workflow").info("ended", extra={"temporal_workflow": details})
    [line] = [json.loads(text) for text in captured.getvalue().splitlines()]
    assert line["temporal_workflow"] == details
    assert line["workflow_id"] == "w2"
    # In JSON the SDK's loggers keep their details out of the message.
    assert workflow.logger.workflow_info_on_message is False
    assert activity.logger.activity_info_on_message is False


def test_text_stays_the_default_format() -> None:
    record = logging.LogRecord("toolcalls", logging.INFO, __file__, 1, "hello %s", ("x",), None)
    assert json.loads(JsonFormatter().format(record))["message"] == "hello x"
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("WARNING")
        [handler] = root.handlers
        assert handler.formatter is not None
        assert not isinstance(handler.formatter, JsonFormatter)
        assert handler.formatter.format(record).endswith("INFO toolcalls: hello x")
    finally:
        root.handlers, root.level = saved


def test_the_docs_list_every_metric_span_and_log_field() -> None:
    from toolcalls.activities import telemetry as activity_metrics
    from toolcalls.worker.telemetry.logs import CALL_FIELDS, SDK_FIELDS
    from toolcalls.workflows.call import telemetry as workflow_metrics

    page = (Path(__file__).resolve().parents[3] / "docs/observability.md").read_text("utf-8")
    histograms = {workflow_metrics.APPROVAL_WAIT, activity_metrics.TOOL_DURATION}
    for name in (*workflow_metrics.WORKFLOW_METRICS, *activity_metrics.ACTIVITY_METRICS):
        scraped = name if name in histograms else f"{name}_total"
        assert f"| `{scraped}` |" in page, name
    for span in workflow_metrics.SPANS:
        assert f"| `{span}` |" in page, span
    for field in ("time", "level", "logger", "message", *CALL_FIELDS, *SDK_FIELDS, "exception"):
        assert f"| `{field}` |" in page, field
