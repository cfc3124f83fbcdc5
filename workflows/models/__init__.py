"""What crosses a boundary: the wire models of a call, of its approvals and of inline calls, what
``ToolCallClient`` hands back, and Temporal's payload size limit.

Pure data: no I/O and no workflow code, so the sandbox passes these modules through. Import from
the modules; this package re-exports nothing.
"""
