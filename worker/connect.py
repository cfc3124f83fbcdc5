"""Connecting to Temporal the way Temporal's own tools do (``temporalio.envconfig``).

Precedence, highest first: command-line flags, ``TEMPORAL_*`` environment variables, the
``[temporal]`` section of our configuration, the Temporal profile file, the defaults
(``localhost:7233``, namespace ``default``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.envconfig import ClientConfigProfile
from temporalio.runtime import Runtime

from toolcalls.worker.config import ConfigError
from toolcalls.worker.sections import TemporalSection
from toolcalls.worker.telemetry.tracing import tracing_configured, tracing_interceptor

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"
PROFILE_ENV = "TEMPORAL_PROFILE"
CONFIG_FILE_ENV = "TEMPORAL_CONFIG_FILE"


@dataclasses.dataclass(frozen=True)
class Target:
    """Where to connect, fully resolved."""

    address: str
    namespace: str
    connect: Mapping[str, Any]
    """Keyword arguments for ``Client.connect`` (TLS, API key, metadata)."""


def resolve_target(
    section: TemporalSection,
    *,
    address: str | None = None,
    namespace: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Target:
    """Merge the layers into one ``Target``; ``env`` replaces the process environment.

    Raises:
        ConfigError: the Temporal profile file is unreadable or lacks the chosen profile.
    """
    # The bridge takes only a real dict.
    env = dict(os.environ if env is None else env)
    # TEMPORAL_PROFILE and TEMPORAL_CONFIG_FILE choose the file layer, and the environment beats
    # our [temporal] section for them too.
    profile_name = env.get(PROFILE_ENV) or section.profile
    chosen_file = env.get(CONFIG_FILE_ENV) or section.config_file
    # A str source would be read as TOML text, not as a path.
    source = Path(chosen_file) if chosen_file else None
    try:
        from_file = ClientConfigProfile.load(
            profile_name, config_source=source, disable_env=True, override_env_vars=env
        )
        from_env = ClientConfigProfile.load(disable_file=True, override_env_vars=env)
    except RuntimeError as exc:
        where = source or "the default Temporal configuration file"
        reason = " ".join(str(exc).split())
        raise ConfigError(
            f"temporal profile {profile_name or 'default'} in {where}: {reason}"
        ) from None
    profile = from_file
    for layer in (
        ClientConfigProfile(address=section.address, namespace=section.namespace),
        from_env,
        ClientConfigProfile(address=address, namespace=namespace),
    ):
        profile = dataclasses.replace(
            profile,
            **{
                f.name: getattr(layer, f.name)
                for f in dataclasses.fields(layer)
                if getattr(layer, f.name) not in (None, {})
            },
        )
    connect: dict[str, Any] = dict(profile.to_client_connect_config())
    resolved_address = str(connect.pop("target_host", None) or DEFAULT_ADDRESS)
    resolved_namespace = str(connect.pop("namespace", None) or DEFAULT_NAMESPACE)
    return Target(resolved_address, resolved_namespace, connect)


async def connect(
    target: Target,
    converter: DataConverter | None = None,
    *,
    runtime: Runtime | None = None,
    environ: Mapping[str, str] | None = None,
) -> Client:
    """A client with ``converter``: the deployment's (``toolcalls.worker.payloads.converter``),
    default the pydantic data converter, which every toolcalls payload needs.

    ``runtime`` is the one whose metrics the worker serves (``toolcalls.worker.telemetry``); when
    ``OTEL_*`` in ``environ`` (default the process's) configure traces, the client traces what it
    starts, signals, updates and queries with the SDK's ``TracingInterceptor``.

    Raises:
        TracingUnavailable: traces are configured but the ``otel`` extra is not installed.
    """
    traced = tracing_configured(os.environ if environ is None else environ)
    return await Client.connect(
        target.address,
        namespace=target.namespace,
        data_converter=converter or pydantic_data_converter,
        interceptors=[tracing_interceptor()] if traced else [],
        runtime=runtime,
        **target.connect,
    )
