"""Connecting to Temporal the way Temporal's own tools do (``temporalio.envconfig``).

Precedence, highest first: command-line flags, ``TEMPORAL_*`` environment variables, the
``[temporal]`` section of our configuration, the Temporal profile file, the defaults
(``localhost:7233``, namespace ``default``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.envconfig import ClientConfigProfile

from worker.config import TemporalSection

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"


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
    """Merge the layers into one ``Target``."""
    source = section.config_file
    from_file = ClientConfigProfile.load(
        section.profile, config_source=source, disable_env=True, override_env_vars=env
    )
    from_env = ClientConfigProfile.load(section.profile, disable_file=True, override_env_vars=env)
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


async def connect(target: Target) -> Client:
    """A client with the pydantic data converter, which every toolcalls payload needs."""
    return await Client.connect(
        target.address,
        namespace=target.namespace,
        data_converter=pydantic_data_converter,
        **target.connect,
    )
