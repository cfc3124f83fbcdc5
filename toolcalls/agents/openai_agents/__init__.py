"""The deployment's tools for OpenAI Agents SDK agents run with Temporal's ``OpenAIAgentsPlugin``.

- ``function_tools(calls)``: in the agent's workflow, a profile's tools as the SDK's
  ``FunctionTool``s; each call the model makes runs through ``calls`` (a ``ToolCalls``: child
  ``ToolCallWorkflow``s, or inline), and the model reads ``model_reply``'s text back;
- ``agent_worker(client, task_queue=..., workflows=[...], model=...)``: the agent's worker,
  with the plugin, on a client of ``client``'s connection;
- ``agent_data_converter(config)``: for an agent's client and worker made by hand, the
  deployment's data converter with the payload converter the plugin requires;
- ``testing.ScriptedModel``: an offline model that asks for prepared tool calls.

Needs the ``openai-agents`` extra: ``pip install 'toolcalls[openai-agents]'`` (the SDK and
``temporalio-openai-agents``, which is ``temporalio.openai_agents``).
"""

from __future__ import annotations

EXTRA_HINT = "pip install 'toolcalls[openai-agents]'"


def _missing(exc: ImportError) -> ImportError:
    return ImportError(
        "toolcalls.agents.openai_agents needs the OpenAI Agents SDK and Temporal's integration "
        f"(no module {exc.name!r}): {EXTRA_HINT}"
    )


try:
    import agents as _sdk
except ImportError as exc:
    raise _missing(exc) from exc
if not hasattr(_sdk, "FunctionTool"):
    # A folder named agents/ ahead of the SDK on sys.path (a project's own, when Python starts
    # in the folder that holds it) hides the SDK's top-level package.
    raise ImportError(
        f"the module imported as 'agents' ({getattr(_sdk, '__file__', None)}) is not the OpenAI "
        "Agents SDK; start Python outside the folder that holds it"
    )
try:
    import temporalio.openai_agents  # noqa: F401
except ImportError as exc:
    raise _missing(exc) from exc

from toolcalls.agents._worker import AgentWorker  # noqa: E402
from toolcalls.agents.openai_agents._converter import agent_data_converter  # noqa: E402
from toolcalls.agents.openai_agents._tools import function_tool, function_tools  # noqa: E402
from toolcalls.agents.openai_agents._worker import agent_worker  # noqa: E402

__all__ = ["AgentWorker", "agent_data_converter", "agent_worker", "function_tool", "function_tools"]
