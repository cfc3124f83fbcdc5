"""The deployment's TOML configuration: defaults, every section, and errors that name the key."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from toolcalls.activities.capabilities import CAPABILITIES, default_ceiling
from toolcalls.activities.catalog import DEFAULT_TOOLS
from toolcalls.activities.spec import Timeouts
from toolcalls.worker.config import (
    CONFIG_ENV,
    Config,
    ConfigError,
    build_catalog,
    load_config,
    parse_config,
)
from toolcalls.workflows.models.call import DEFAULT_TASK_QUEUE, CapabilityPolicy, Effect, SideEffect
from toolcalls.workflows.rules import policy

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "toolcalls.toml"

FULL = """
task_queue = "agents"
tools = ["calculator", "current_datetime", "ask_user"]
log_level = "debug"

[temporal]
profile = "staging"
config_file = "/etc/temporal/temporal.toml"
address = "temporal.internal:7233"
namespace = "agents-ns"

[worker]
queue = "agents"
serve_workflows = true
serve_tools = false
graceful_shutdown_seconds = 12.5
max_concurrent_activities = 7
max_cached_workflows = 0

[ceiling]
default_effect = "deny"

[ceiling.rules]
"filesystem.*" = "require_approval"
"network.read" = "allow"

[ceiling.tools]
calculator = "deny"

[activities]
schedule_to_start_seconds = 5
read_attempts = 3
question_timeout_seconds = 90
local_pure_tools = false

[activities.task_queues]
current_datetime = "clock-host"

[activities.timeouts.calculator]
start_to_close_seconds = 2
heartbeat_seconds = 1

[dev]
data_dir = "/var/lib/toolcalls"
ip = "0.0.0.0"
port = 7300
ui_port = 8300
headless = true
namespace = "dev-ns"
"""


def write(tmp_path: Path, text: str, name: str = "toolcalls.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    return path, str(info.value)


def test_defaults_serve_everything_on_the_default_queue() -> None:
    config = load_config(env={})
    assert config == Config()
    assert config.task_queue == DEFAULT_TASK_QUEUE
    assert config.tools == list(DEFAULT_TOOLS)
    assert config.queue == DEFAULT_TASK_QUEUE
    assert config.serves_workflows is True
    assert config.served_tools(build_catalog(config)) == ["calculator", "current_datetime"]
    assert config.log_level == "INFO"
    assert config.dev.port == 7233
    assert config.dev.ui_port == 8233
    assert config.dev.headless is False
    settings = config.catalog_settings()
    assert settings.schedule_to_start == timedelta(seconds=60)
    assert settings.read_attempts == 1
    assert settings.question_timeout == timedelta(seconds=300)
    assert settings.local_pure_tools is True
    assert dict(settings.task_queues) == {}


def test_default_ceiling_requires_approval_for_every_write_capability() -> None:
    ceiling = Config().ceiling_policy()
    assert ceiling == default_ceiling()
    writes = {cap for cap, kind in CAPABILITIES.items() if kind is SideEffect.WRITE}
    reads = set(CAPABILITIES) - writes
    assert writes
    assert reads
    for cap in sorted(writes):
        verdicts = policy.evaluate(ceiling, "some_tool", [cap], policy.DEPLOYMENT)
        assert policy.decide(verdicts, None, "some_tool", [cap]).effect is Effect.REQUIRE_APPROVAL
    for cap in sorted(reads):
        verdicts = policy.evaluate(ceiling, "some_tool", [cap], policy.DEPLOYMENT)
        assert policy.decide(verdicts, None, "some_tool", [cap]).effect is Effect.ALLOW


def test_written_ceiling_replaces_default_and_defaults_to_approval() -> None:
    config = parse_config({"ceiling": {"rules": {"network.read": "allow"}}})
    ceiling = config.ceiling_policy()
    assert ceiling == CapabilityPolicy(
        rules={"network.read": Effect.ALLOW}, default_effect=Effect.REQUIRE_APPROVAL
    )
    # A capability the file forgot still needs a human, even a read one.
    verdicts = policy.evaluate(ceiling, "t", ["email.read"], policy.DEPLOYMENT)
    assert policy.decide(verdicts, None, "t", ["email.read"]).effect is Effect.REQUIRE_APPROVAL


def test_every_section_is_parsed(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL), env={})
    assert config.task_queue == "agents"
    assert config.log_level == "DEBUG"
    assert config.temporal.profile == "staging"
    assert config.temporal.config_file == Path("/etc/temporal/temporal.toml")
    assert config.temporal.address == "temporal.internal:7233"
    assert config.temporal.namespace == "agents-ns"
    assert config.worker.queue == "agents"
    assert config.worker.serve_workflows is True
    assert config.worker.serve_tools is False
    assert config.worker.graceful_shutdown_seconds == 12.5
    assert config.worker.max_concurrent_activities == 7
    assert config.worker.max_cached_workflows == 0
    assert config.ceiling_policy() == CapabilityPolicy(
        rules={"filesystem.*": Effect.REQUIRE_APPROVAL, "network.read": Effect.ALLOW},
        tools={"calculator": Effect.DENY},
        default_effect=Effect.DENY,
    )
    settings = config.catalog_settings()
    assert settings.schedule_to_start == timedelta(seconds=5)
    assert settings.read_attempts == 3
    assert settings.question_timeout == timedelta(seconds=90)
    assert settings.local_pure_tools is False
    assert dict(settings.task_queues) == {"current_datetime": "clock-host"}
    assert dict(settings.timeouts) == {
        "calculator": Timeouts(start_to_close=timedelta(seconds=2), heartbeat=timedelta(seconds=1))
    }
    assert config.dev.data_dir == Path("/var/lib/toolcalls")
    assert config.dev.ip == "0.0.0.0"
    assert (config.dev.port, config.dev.ui_port, config.dev.headless) == (7300, 8300, True)
    assert config.dev.namespace == "dev-ns"
    catalog = build_catalog(config)
    assert catalog.names == ["calculator", "current_datetime", "ask_user"]
    assert catalog.options("current_datetime").task_queue == "clock-host"
    assert catalog.options("calculator").start_to_close == timedelta(seconds=2)
    assert config.served_tools(catalog) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('colour = "red"', "colour: unknown key"),
        ('[worker]\nqueues = "b"', "worker.queues: unknown key"),
        ("[dev]\nui = false", "dev.ui: unknown key"),
        (
            "[activities.timeouts.calculator]\nstart_to_close_seconds = 1\nretries = 2",
            "activities.timeouts.calculator.retries: unknown key",
        ),
        ('tools = "calculator"', "tools: Input should be a valid list"),
        (
            '[worker]\nmax_concurrent_activities = "many"',
            "worker.max_concurrent_activities: Input should be a valid integer",
        ),
        ("[worker]\nserve_tools = 3", "worker.serve_tools: Input should be a valid boolean"),
        (
            "[activities]\nread_attempts = 4",
            "activities.read_attempts: Input should be less than or equal to 3",
        ),
        (
            "[activities]\nread_attempts = 0",
            "activities.read_attempts: Input should be greater than or equal to 1",
        ),
        (
            "[worker]\ngraceful_shutdown_seconds = -1",
            "worker.graceful_shutdown_seconds: Input should be greater than 0",
        ),
        (
            "[activities]\nschedule_to_start_seconds = -0.5",
            "activities.schedule_to_start_seconds: Input should be greater than 0",
        ),
        (
            "[activities]\nquestion_timeout_seconds = 0",
            "activities.question_timeout_seconds: Input should be greater than 0",
        ),
        (
            "[activities.timeouts.calculator]\nstart_to_close_seconds = -5",
            "activities.timeouts.calculator.start_to_close_seconds: Input should be greater than 0",
        ),
        ('[ceiling.rules]\n"file system" = "deny"', "ceiling.rules: invalid rule keys"),
        (
            '[ceiling.rules]\n"filesystem.write" = "maybe"',
            "ceiling.rules.filesystem.write: Input should be 'allow', 'require_approval' or 'deny'",
        ),
        ('[ceiling]\ndefault_effect = "sometimes"', "ceiling.default_effect: Input should be"),
        ("[dev]\nport = 70000", "dev.port: Input should be less than or equal to 65535"),
        ('task_queue = ""', "task_queue: String should have at least 1 character"),
        ('log_level = "LOUD"', "log_level: unknown log level 'LOUD'"),
        ('[mcp]\ntoken_env = "MY TOKEN"', "mcp.token_env: 'MY TOKEN' is not an environment"),
        ('[mcp]\nuser = ""', "mcp.user: String should have at least 1 character"),
        ('[mcp]\napprove_via_elicitation = "perhaps"', "mcp.approve_via_elicitation: Input should"),
    ],
)
def test_invalid_values_name_the_key_and_the_file(tmp_path: Path, text: str, expected: str) -> None:
    path, message = load_error(tmp_path, text)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_misspelt_ceiling_rules_are_refused(tmp_path: Path) -> None:
    # A deny for "filesytem.write" would otherwise match nothing and silently not apply.
    _, message = load_error(
        tmp_path, '[ceiling.rules]\n"filesytem.write" = "deny"\n"gti.*" = "deny"\n"git.*" = "deny"'
    )
    assert "ceiling.rules: rule keys ['filesytem.write', 'gti.*'] match no capability" in message
    assert "'git.*'" not in message


def test_every_bad_key_is_named_at_once(tmp_path: Path) -> None:
    _, message = load_error(
        tmp_path, "oops = 1\n[activities]\nread_attempts = 9\n[worker]\nserve_tools = 3"
    )
    assert "oops: unknown key" in message
    assert "activities.read_attempts:" in message
    assert "worker.serve_tools:" in message


def test_unknown_tool_in_tools(tmp_path: Path) -> None:
    path, message = load_error(tmp_path, 'tools = ["calculator", "teleport"]')
    assert message.startswith(f"{path}: tools: unknown tools teleport; known: calculator")


def test_task_queue_for_a_tool_not_enabled(tmp_path: Path) -> None:
    path, message = load_error(
        tmp_path, 'tools = ["calculator"]\n[activities.task_queues]\ncurrent_datetime = "b"'
    )
    assert message == f"{path}: activities.task_queues.current_datetime: not an enabled tool"


def test_timeouts_for_a_tool_not_enabled(tmp_path: Path) -> None:
    path, message = load_error(
        tmp_path,
        'tools = ["calculator"]\n[activities.timeouts.current_datetime]\n'
        "start_to_close_seconds = 3",
    )
    assert message == f"{path}: activities.timeouts.current_datetime: not an enabled tool"


def test_ceiling_entry_for_an_unknown_tool(tmp_path: Path) -> None:
    # A deny for a misspelt tool name would silently not apply.
    path, message = load_error(tmp_path, '[ceiling.tools]\ncalculater = "deny"')
    assert message == f"{path}: ceiling.tools.calculater: unknown tool"
    # A ceiling may still mention a known tool this deployment does not enable.
    config = load_config(
        write(tmp_path, 'tools = ["calculator"]\n[ceiling.tools]\ncurrent_datetime = "deny"'),
        env={},
    )
    assert config.ceiling_policy().tools == {"current_datetime": Effect.DENY}


def test_catalog_errors_name_the_file(tmp_path: Path) -> None:
    path, message = load_error(tmp_path, '[activities.task_queues]\nask_user = "b"')
    assert message == f"{path}: ask_user: runs inside the workflow and has no task queue"
    path, message = load_error(
        tmp_path,
        "[activities.timeouts.calculator]\nstart_to_close_seconds = 1\nheartbeat_seconds = 5",
    )
    assert message.startswith(f"{path}: calculator: heartbeat must be positive")


def test_bad_toml_names_the_file(tmp_path: Path) -> None:
    path, message = load_error(tmp_path, 'tools = ["calculator"')
    assert message.startswith(f"{path}: not valid TOML: ")


@pytest.mark.parametrize("kind", ["missing", "directory", "not utf-8"])
def test_unreadable_file_names_the_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "toolcalls.toml"
    if kind == "directory":
        path.mkdir()
    elif kind == "not utf-8":
        path.write_bytes(b'task_queue = "\xff\xfe"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    if kind == "missing":
        assert message == f"{path}: cannot read: No such file or directory"
    elif kind == "directory":
        assert message == f"{path}: cannot read: Is a directory"
    else:
        assert message == f"{path}: not valid TOML: not UTF-8 at byte 14"


def test_toolcalls_config_is_used_when_no_path_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_env = write(tmp_path, 'task_queue = "from-env"', "env.toml")
    explicit = write(tmp_path, 'task_queue = "explicit"', "explicit.toml")
    assert load_config(env={CONFIG_ENV: str(from_env)}).task_queue == "from-env"
    assert load_config(explicit, env={CONFIG_ENV: str(from_env)}).task_queue == "explicit"
    assert load_config(env={CONFIG_ENV: ""}) == Config()
    with pytest.raises(ConfigError, match=r"absent\.toml: cannot read"):
        load_config(env={CONFIG_ENV: str(tmp_path / "absent.toml")})
    monkeypatch.setenv(CONFIG_ENV, str(from_env))
    assert load_config().task_queue == "from-env"
    assert load_config(env={}) == Config()


def test_tools_only_worker_on_another_queue(tmp_path: Path) -> None:
    shared = (
        'task_queue = "main"\ntools = ["calculator", "current_datetime", "ask_user"]\n'
        '[activities.task_queues]\ncurrent_datetime = "host-b"\n'
    )
    main = load_config(write(tmp_path, shared, "main.toml"), env={})
    host_b = load_config(write(tmp_path, shared + '[worker]\nqueue = "host-b"\n', "b.toml"), env={})
    catalog = build_catalog(main)
    assert (main.queue, main.serves_workflows) == ("main", True)
    assert main.served_tools(catalog) == ["calculator"]
    assert (host_b.queue, host_b.serves_workflows) == ("host-b", False)
    assert host_b.served_tools(catalog) == ["current_datetime"]

    both = parse_config(
        {
            **host_b.model_dump(exclude={"worker"}),
            "worker": {"queue": "host-b", "serve_workflows": True},
        }
    )
    assert both.serves_workflows is True
    no_tools = parse_config({"worker": {"serve_tools": False}})
    assert no_tools.serves_workflows is True
    assert no_tools.served_tools(build_catalog(no_tools)) == []
    tools_only = parse_config({"worker": {"serve_workflows": False}})
    assert tools_only.queue == DEFAULT_TASK_QUEUE
    assert tools_only.serves_workflows is False
    assert tools_only.served_tools(build_catalog(tools_only)) == ["calculator", "current_datetime"]


def test_example_config_loads() -> None:
    # `make run` creates the scratch folder the example's file tools work under.
    Path("/tmp/toolcalls-scratch").mkdir(exist_ok=True)
    config = load_config(EXAMPLE, env={})
    assert config.task_queue == "toolcalls"
    assert config.tools == [
        *("calculator", "current_datetime", "ask_user"),
        *("read_file", "list_files", "create_file"),
    ]
    assert config.worker.graceful_shutdown_seconds == 30
    assert config.ceiling is None
    assert config.ceiling_policy() == default_ceiling()
    assert (config.dev.data_dir, config.dev.port, config.dev.ui_port) == (
        Path(".toolcalls"),
        7233,
        8233,
    )
    assert build_catalog(config).names == config.tools


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"file": {}}, "file: unknown key; did you mean 'files'?"),
        ({"files": {"rootz": []}}, "files.rootz: unknown key; did you mean 'roots'?"),
        (
            {"http": [{"base_ur": "https://x"}]},
            "http.0.base_ur: unknown key; did you mean 'base_url'?",
        ),
        (
            {"activities": {"timeouts": {"calculator": {"heartbeat_second": 1}}}},
            "heartbeat_second: unknown key; did you mean 'heartbeat_seconds'?",
        ),
        ({"ceiling": {"rule": {}}}, "ceiling.rule: unknown key; did you mean 'rules'?"),
    ],
)
def test_a_misspelt_key_gets_the_nearest_valid_one(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert message in str(caught.value)


def test_a_key_near_nothing_gets_no_suggestion() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"zzzz": 1})
    assert str(caught.value) == "configuration: zzzz: unknown key"
