"""What crosses a boundary: the wire models of a call, of its approvals, of standing grants and of
inline calls, what ``ToolCallClient`` hands back, and Temporal's payload size limit.

Pure data: no I/O and no workflow code, so the sandbox can pass these modules through (the
worker's ``PASSTHROUGH_MODULES`` names the ones every workflow run imports). Import from the
modules; this package re-exports nothing.
"""
