"""The MCP front: ``toolcalls mcp`` serves the deployment's enabled tools to any MCP client.

Every ``tools/call`` is a ``ToolCallWorkflow`` started through ``ToolCallClient``, so an MCP
client gets the deployment's policy, approvals, exactly-once writes and history without writing
Temporal code. The modules, in the order a request meets them: ``server`` (transports and the
SDK's server), ``auth`` (the HTTP bearer token; ``oauth`` and ``requester`` for OAuth access
tokens), ``tools`` (``tools/list``), ``front`` (shared state, workflow ids), ``calls``
(``tools/call``), ``follow`` (progress and elicitation while a call waits), ``elicit`` (the
forms), ``handover`` (approvals handed to the inbox as links), ``rounds`` (2026-07-28
``input_required`` rounds), ``tasks`` (the Tasks extension), ``sealing`` (the key of task ids and
``requestState``), ``results`` (the MCP result). ``settings`` is the ``[mcp]`` section and
``oauth_settings`` its ``[mcp.oauth]``; they are the only modules that load without the ``mcp``
extra.
"""

from __future__ import annotations

from toolcalls.activities.family import Extra

MCP_EXTRA = Extra("mcp", ("mcp", "starlette", "uvicorn", "jwt"))
