"""The ways to reach a call: ``ToolCallClient`` for applications and UIs, ``ToolCalls`` for a parent
workflow (child calls, inline calls and the parent's handlers for them).

Import from the modules; this package re-exports nothing (``toolcalls.workflows`` is the facade).
"""
