"""The life of a call: ``ToolCallWorkflow`` and its parts, ``InlineCall`` (the same life run
inside a parent workflow), and the two workflows beside it (standing grants, definitions).

Workflow code: the standard library, ``temporalio``, ``pydantic`` and the pure ``models`` and
``rules`` only. Import from the modules; this package re-exports nothing, so importing one part
loads only what that part needs.
"""
