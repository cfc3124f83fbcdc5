"""URL checks that need no lookup: what every hop's URL must look like before it is resolved."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

import httpx

from toolcalls.activities.network.failures import URLRefused

MAX_URL_CHARS = 2_048
"""The longest URL accepted, on every hop (the spec's fetch_url bound)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Target:
    """A checked URL and the parts the guard needs: its origin and where to connect."""

    url: httpx.URL
    scheme: str
    host: str
    port: int

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


def lower(names: Iterable[str]) -> frozenset[str]:
    """The names, lowercased (header names, schemes, host names)."""
    return frozenset(name.lower() for name in names)


def parse_url(
    url: str,
    *,
    schemes: Collection[str] = ("http", "https"),
    allowed_ports: Collection[int] | None = (80, 443),
) -> httpx.URL:
    """Validate a URL's text, with no lookup, and return it parsed. Raises ``URLRefused``.

    Pure: argument models use it to refuse a bad URL before a call is planned.
    """
    ports = None if allowed_ports is None else frozenset(allowed_ports)
    return target_of(url, lower(schemes), ports).url


def target_of(url: str, schemes: frozenset[str], allowed_ports: frozenset[int] | None) -> Target:
    """``url`` checked against the schemes and ports; raises ``URLRefused``."""
    if len(url) > MAX_URL_CHARS:
        raise URLRefused(f"url: longer than {MAX_URL_CHARS} characters")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise URLRefused("url: contains whitespace or control characters")
    if "\\" in url:
        raise URLRefused("url: contains a backslash")
    scheme, sep, rest = url.partition(":")
    if not sep or scheme.lower() not in schemes:
        allowed = ", ".join(sorted(schemes))
        raise URLRefused(f"url: scheme must be one of {allowed}")
    if not rest.startswith("//"):
        raise URLRefused("url: host required")
    authority = rest[2:]
    for end in "/?#":
        authority = authority.split(end, 1)[0]
    if "@" in authority:
        raise URLRefused("url: credentials in urls are refused")
    try:
        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeError, ValueError) as error:
        raise URLRefused("url: not a valid url") from error
    if parsed.userinfo:
        raise URLRefused("url: credentials in urls are refused")
    if not host:
        raise URLRefused("url: host required")
    if "%" in host:
        raise URLRefused("url: zone ids are refused")
    lowered = parsed.scheme.lower()
    port = DEFAULT_PORTS[lowered] if parsed.port is None else parsed.port
    if not 0 < port < 65_536:
        raise URLRefused(f"url: port {port} is not a valid port")
    if allowed_ports is not None and port not in allowed_ports:
        ports = ", ".join(str(p) for p in sorted(allowed_ports))
        raise URLRefused(f"url: port {port} is not allowed (allowed: {ports})")
    return Target(url=parsed, scheme=lowered, host=host, port=port)
