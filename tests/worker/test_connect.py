"""Where the worker connects: flags > TEMPORAL_* > [temporal] > Temporal profile file > defaults.

The profile files are real ``temporalio.envconfig`` TOML files; the environment is passed
explicitly, so the user running the tests cannot change the outcome.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import TLSConfig
from temporalio.testing import WorkflowEnvironment

from toolcalls.worker.config import ConfigError
from toolcalls.worker.connect import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    Target,
    connect,
    resolve_target,
)
from toolcalls.worker.sections import TemporalSection

PROFILES = """
[profile.default]
address = "file-default.example:7233"
namespace = "file-default-ns"

[profile.other]
address = "file-other.example:7233"
namespace = "file-other-ns"

[profile.cloud]
address = "cloud.example:7233"
namespace = "cloud-ns"
api_key = "cloud-key"

[profile.cloud.tls]
server_name = "sni.example"

[profile.plain]
address = "plain.example:7233"
api_key = "plain-key"

[profile.plain.tls]
disabled = true
"""


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    path = tmp_path / "temporal.toml"
    path.write_text(PROFILES, encoding="utf-8")
    return path


@pytest.fixture
def no_file(tmp_path: Path) -> dict[str, str]:
    """An environment whose Temporal profile file does not exist (not the user's real one)."""
    return {"TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml")}


def where(target: Target) -> tuple[str, str]:
    return target.address, target.namespace


def test_defaults_when_no_layer_says_anything(no_file: dict[str, str]) -> None:
    target = resolve_target(TemporalSection(), env=no_file)
    assert target == Target(DEFAULT_ADDRESS, DEFAULT_NAMESPACE, {})
    assert where(target) == ("localhost:7233", "default")


def test_profile_file_default_profile(profiles: Path) -> None:
    target = resolve_target(TemporalSection(), env={"TEMPORAL_CONFIG_FILE": str(profiles)})
    assert where(target) == ("file-default.example:7233", "file-default-ns")
    assert target.connect == {}


def test_section_config_file_and_profile(profiles: Path) -> None:
    section = TemporalSection(config_file=profiles, profile="other")
    assert where(resolve_target(section, env={})) == ("file-other.example:7233", "file-other-ns")
    section = TemporalSection(config_file=profiles)
    assert where(resolve_target(section, env={})) == (
        "file-default.example:7233",
        "file-default-ns",
    )


def test_temporal_profile_env_chooses_the_profile(profiles: Path) -> None:
    env = {"TEMPORAL_CONFIG_FILE": str(profiles), "TEMPORAL_PROFILE": "other"}
    assert where(resolve_target(TemporalSection(), env=env)) == (
        "file-other.example:7233",
        "file-other-ns",
    )


def test_environment_beats_section_for_profile_and_file(profiles: Path, tmp_path: Path) -> None:
    section_file = tmp_path / "section.toml"
    section_file.write_text(
        '[profile.default]\naddress = "section-file:1"\n'
        '[profile.other]\naddress = "section-other:2"\n',
        encoding="utf-8",
    )
    section = TemporalSection(config_file=section_file, profile="other")
    assert resolve_target(section, env={}).address == "section-other:2"
    assert resolve_target(section, env={"TEMPORAL_PROFILE": "default"}).address == "section-file:1"
    env = {"TEMPORAL_CONFIG_FILE": str(profiles)}
    assert resolve_target(section, env=env).address == "file-other.example:7233"


def test_section_beats_profile_file_field_by_field(profiles: Path) -> None:
    env = {"TEMPORAL_CONFIG_FILE": str(profiles), "TEMPORAL_PROFILE": "cloud"}
    target = resolve_target(TemporalSection(address="section:7233"), env=env)
    assert where(target) == ("section:7233", "cloud-ns")
    # What the section does not set still comes from the profile.
    assert target.connect["api_key"] == "cloud-key"
    target = resolve_target(TemporalSection(namespace="section-ns"), env=env)
    assert where(target) == ("cloud.example:7233", "section-ns")


def test_environment_beats_section_and_file(profiles: Path) -> None:
    section = TemporalSection(address="section:7233", namespace="section-ns")
    env = {
        "TEMPORAL_CONFIG_FILE": str(profiles),
        "TEMPORAL_ADDRESS": "env:7233",
        "TEMPORAL_NAMESPACE": "env-ns",
    }
    assert where(resolve_target(section, env=env)) == ("env:7233", "env-ns")
    only_namespace = {"TEMPORAL_CONFIG_FILE": str(profiles), "TEMPORAL_NAMESPACE": "env-ns"}
    assert where(resolve_target(section, env=only_namespace)) == ("section:7233", "env-ns")
    assert where(resolve_target(TemporalSection(), env=only_namespace)) == (
        "file-default.example:7233",
        "env-ns",
    )


def test_flags_beat_everything(profiles: Path) -> None:
    section = TemporalSection(
        address="section:7233", namespace="section-ns", config_file=profiles, profile="other"
    )
    env = {
        "TEMPORAL_CONFIG_FILE": str(profiles),
        "TEMPORAL_PROFILE": "cloud",
        "TEMPORAL_ADDRESS": "env:7233",
        "TEMPORAL_NAMESPACE": "env-ns",
    }
    target = resolve_target(section, address="flag:7233", namespace="flag-ns", env=env)
    assert where(target) == ("flag:7233", "flag-ns")
    target = resolve_target(section, namespace="flag-ns", env=env)
    assert where(target) == ("env:7233", "flag-ns")


def test_api_key_turns_tls_on(no_file: dict[str, str]) -> None:
    target = resolve_target(TemporalSection(), env={**no_file, "TEMPORAL_API_KEY": "secret"})
    assert target.connect == {"api_key": "secret", "tls": True}
    assert where(target) == (DEFAULT_ADDRESS, DEFAULT_NAMESPACE)


def test_tls_settings_from_the_profile_file(profiles: Path) -> None:
    cloud = resolve_target(
        TemporalSection(config_file=profiles, profile="cloud"), address="flag:1", env={}
    )
    assert cloud.address == "flag:1"
    assert cloud.connect["api_key"] == "cloud-key"
    tls = cloud.connect["tls"]
    assert isinstance(tls, TLSConfig)
    assert tls.domain == "sni.example"
    plain = resolve_target(TemporalSection(config_file=profiles, profile="plain"), env={})
    assert plain.connect == {"api_key": "plain-key", "tls": False}


def test_given_env_replaces_the_process_environment(
    profiles: Path, no_file: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "process:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "process-ns")
    monkeypatch.setenv("TEMPORAL_API_KEY", "process-key")
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(profiles))
    monkeypatch.setenv("TEMPORAL_PROFILE", "other")
    assert resolve_target(TemporalSection(), env=no_file) == Target(
        DEFAULT_ADDRESS, DEFAULT_NAMESPACE, {}
    )
    # Without env, the process environment is the environment layer.
    target = resolve_target(TemporalSection())
    assert where(target) == ("process:7233", "process-ns")
    assert target.connect == {"api_key": "process-key", "tls": True}
    monkeypatch.delenv("TEMPORAL_ADDRESS")
    monkeypatch.delenv("TEMPORAL_NAMESPACE")
    assert where(resolve_target(TemporalSection())) == ("file-other.example:7233", "file-other-ns")


def test_missing_profile_is_a_one_line_config_error(profiles: Path) -> None:
    section = TemporalSection(config_file=profiles, profile="nope")
    with pytest.raises(ConfigError) as info:
        resolve_target(section, env={})
    message = str(info.value)
    assert "nope" in message
    assert str(profiles) in message
    assert "\n" not in message
    with pytest.raises(ConfigError, match="missing"):
        resolve_target(
            TemporalSection(),
            env={"TEMPORAL_CONFIG_FILE": str(profiles), "TEMPORAL_PROFILE": "missing"},
        )


def test_bad_profile_file_is_a_one_line_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[profile.default\naddress = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        resolve_target(TemporalSection(), env={"TEMPORAL_CONFIG_FILE": str(bad)})
    message = str(info.value)
    assert str(bad) in message
    assert "TOML" in message
    assert "\n" not in message


async def test_connect_uses_the_target_and_the_pydantic_converter(
    env: WorkflowEnvironment, no_file: dict[str, str]
) -> None:
    address = env.client.service_client.config.target_host
    target = resolve_target(
        TemporalSection(address="127.0.0.1:1", namespace="nowhere"),
        env={**no_file, "TEMPORAL_NAMESPACE": "default", "TEMPORAL_ADDRESS": address},
    )
    assert where(target) == (address, "default")
    client = await connect(target)
    assert client.namespace == "default"
    assert client.data_converter is pydantic_data_converter
    assert await client.service_client.check_health()
