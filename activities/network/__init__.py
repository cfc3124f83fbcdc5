"""Outbound HTTP: one guarded network path and the tools that use it."""
