"""Adapters that give an agent framework's agents the deployment's tools, durable and approved.

One module per framework, each behind its own extra: ``toolcalls.agents.pydantic_ai``,
``toolcalls.agents.openai_agents`` and ``toolcalls.agents.langgraph``. Each offers a profile's
tools in the framework's own terms and runs every call through ``ToolCalls`` from the agent's
workflow, so an approval wait is a durable wait of that workflow. What the model reads back is the
one mapping every front shares, ``toolcalls.workflows.models.reply``.
"""
