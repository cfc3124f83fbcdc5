"""Fixtures of the core family's tests: none are shared between its modules yet.

``test_clock`` keeps its own ``host_not_in_utc`` (only it needs one); fixtures that two modules
come to need move here.
"""
