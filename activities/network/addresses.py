"""Which addresses a request may reach: the default deny rule and its pieces (pure, no I/O)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Admission = Callable[[Address], str | None]
"""None admits the address; otherwise the reason it is refused, e.g. "loopback", "private"."""

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _nets(*pairs: tuple[str, str]) -> tuple[tuple[_Network, str], ...]:
    return tuple((ipaddress.ip_network(net), reason) for net, reason in pairs)


_IPV4_DENIED = _nets(
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (cgnat)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved (ietf protocol assignments)"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "reserved (6to4 relay)"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
)
_IPV6_DENIED = _nets(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "local-use nat64"),
    ("100::/64", "reserved (discard-only)"),
    ("2001:db8::/32", "documentation"),
    ("2001:2::/48", "benchmarking"),
    ("3fff::/20", "documentation"),
    ("fc00::/7", "unique-local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
_IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _ipv4_reason(address: ipaddress.IPv4Address) -> str | None:
    for network, reason in _IPV4_DENIED:
        if address in network:
            return reason
    if not address.is_global:
        return "non-public"
    return None


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, 6to4, Teredo, NAT64)."""
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        return address.teredo
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return (ipaddress.IPv4Address(int(address) & 0xFFFFFFFF),)
    return ()


def public_only(address: Address) -> str | None:
    """The default deny rule: admit only plainly public unicast addresses.

    IPv4 embedded in IPv6 is judged by the IPv4 it carries (``::ffff:127.0.0.1`` is loopback,
    ``2002:7f00:1::`` too); every IPv6 address outside ``2000::/3`` is refused. ``is_global`` is
    only the last word, never the first: it admits NAT64, 6to4, compatible, site-local and
    multicast forms of addresses nobody should reach.
    """
    if isinstance(address, ipaddress.IPv4Address):
        return _ipv4_reason(address)
    address = ipaddress.IPv6Address(int(address))  # drop a zone id: it changes nothing here
    for network, reason in _IPV6_DENIED:
        if address in network:
            return reason
    carried = embedded_ipv4(address)
    if carried:
        for inner in carried:
            inner_reason = _ipv4_reason(inner)
            if inner_reason is not None:
                return f"{inner_reason} (ipv4 {inner} embedded in ipv6)"
        return None
    if address not in _IPV6_GLOBAL_UNICAST:
        return "reserved"
    if not address.is_global:
        return "non-public"
    return None


def any_address(address: Address) -> str | None:
    """Admit every address (configured destinations, tests)."""
    return None
