"""The data converter of an agent's client and worker: the deployment's, for ``OpenAIAgentsPlugin``.

The plugin needs its own payload converter, ``OpenAIPayloadConverter`` (pydantic, leaving out
fields that were never set, as the OpenAI API expects its items), and puts it in place of the
SDK's default one, keeping the converter's codec, failure converter and payload store. Handed a
converter that already has it, the plugin refuses it with temporalio 1.35, whose converters wrap
their payload converter; so the converter given to it names the default payload converter, and
the plugin swaps it. Every toolcalls payload reads the same through ``OpenAIPayloadConverter``:
unset fields come back as their defaults, and no toolcalls model has a default that differs
between two processes. The deployment's codec and store stay, so the agent's worker reads its
calls' results as the deployment's workers wrote them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from temporalio.converter import DataConverter, DefaultPayloadConverter

if TYPE_CHECKING:
    from toolcalls.worker.config import Config


def agent_data_converter(
    config: Config | str | None = None, *, environ: Mapping[str, str] | None = None
) -> DataConverter:
    """``toolcalls.data_converter(config)`` (a ``Config``, a file's path, or
    ``$TOOLCALLS_CONFIG``), ready for ``OpenAIAgentsPlugin``: pass both to the agent's client.

    Raises:
        ConfigError: the configuration is invalid or its keys cannot be read.
    """
    # The worker's configuration code stays out of the workflow sandbox, which imports this
    # package for ``function_tools``.
    from toolcalls.worker.payloads.converter import data_converter

    converter = data_converter(config, environ=environ)
    return dataclasses.replace(converter, payload_converter_class=DefaultPayloadConverter)
