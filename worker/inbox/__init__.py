"""The approval inbox (``toolcalls inbox``): a web page where people see exactly what they approve.

``settings`` (the ``[inbox]`` section, read by the worker too), ``auth`` (passwords, sessions,
CSRF, login limits, the trusted proxy), ``rendering`` (previews for people), ``app`` (the
Starlette application), ``pages``, ``login`` and ``actions`` (its routes), ``serve`` (the
commands). Only ``settings`` is imported without the ``inbox`` extra.
"""
