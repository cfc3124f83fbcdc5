"""Fixtures of the network family's tests: none are shared between its modules yet.

The servers they reach are context managers in ``tests.support.http_servers``,
``tests.support.http_api_servers`` and ``tests.support.web_search`` (each test opens the ones it
needs, with the resolver it gives them); fixtures that two modules come to need move here.
"""
