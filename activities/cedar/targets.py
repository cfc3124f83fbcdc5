"""A call's target, as a policy's resource attributes: taken from its validated arguments.

Only the target is taken, never other argument values: ``path`` (of a file tool, or a process's
``cwd``), ``host`` (of a URL), ``domains`` (of an email's recipients), ``calendar``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

_RECIPIENTS = ("to", "cc", "bcc")
_MAX_DOMAINS = 100


def targets(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Resource attributes for the target ``arguments`` name (absent ones are left out)."""
    found: dict[str, Any] = {}
    path = arguments.get("path", arguments.get("cwd"))
    if isinstance(path, str):
        found["path"] = path
    url = arguments.get("url")
    if isinstance(url, str):
        try:
            host = urlsplit(url).hostname
        except ValueError:
            host = None
        if host:
            found["host"] = host.lower()
    domains: list[str] = []
    for key in _RECIPIENTS:
        value = arguments.get(key)
        addresses = [value] if isinstance(value, str) else value or []
        for address in addresses:
            if isinstance(address, str) and "@" in address:
                domain = address.rsplit("@", 1)[1].strip().strip(">").lower()
                if domain not in domains:
                    domains.append(domain)
    if domains or any(key in arguments for key in _RECIPIENTS):
        found["domains"] = domains[:_MAX_DOMAINS]
    calendar = arguments.get("calendar", arguments.get("calendar_id"))
    if isinstance(calendar, str):
        found["calendar"] = calendar
    return found
