"""The network guard's pure parts: the default deny rule and URL validation (no sockets)."""

from __future__ import annotations

import ipaddress

import pytest

from toolcalls.activities.network.guard import (
    MAX_URL_CHARS,
    URLRefused,
    any_address,
    embedded_ipv4,
    parse_url,
    public_only,
)

REFUSED = [
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("100.64.0.1", "cgnat"),
    ("100.127.255.254", "cgnat"),
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("169.254.169.254", "link-local"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.0.0.8", "reserved"),
    ("192.0.2.1", "documentation"),
    ("192.88.99.1", "reserved"),
    ("192.168.1.1", "private"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fec0::1", "site-local"),
    ("fc00::1", "unique-local"),
    ("fd00:ec2::254", "unique-local"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("2001:2::1", "benchmarking"),
    ("100::1", "reserved"),
    ("5f00::1", "reserved"),
    ("4000::1", "reserved"),
    ("64:ff9b:1::a00:1", "local-use nat64"),
    # IPv4 embedded in IPv6, judged by the IPv4 it carries.
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:7f00:1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::127.0.0.1", "loopback"),
    ("::10.1.2.3", "private"),
    ("2002:7f00:1::", "loopback"),
    ("2002:a9fe:a9fe::1", "link-local"),
    ("2002:c0a8:101::", "private"),
    ("64:ff9b::7f00:1", "loopback"),
    ("64:ff9b::a9fe:a9fe", "link-local"),
    ("64:ff9b::6440:1", "cgnat"),
    # Teredo: server 65.54.227.120, client 127.0.0.1 (stored inverted: 80ff:fffe).
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),
    # Teredo with a private server address.
    ("2001:0:a00:1:8000:63bf:f7f7:f7f7", "private"),
]

ADMITTED = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255",
    "100.128.0.0",
    "172.32.0.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "2002:808:808::1",
    "64:ff9b::808:808",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
]


@pytest.mark.parametrize(("text", "reason"), REFUSED)
def test_the_default_rule_refuses_every_non_public_range(text: str, reason: str) -> None:
    refused = public_only(ipaddress.ip_address(text))
    assert refused is not None
    assert reason in refused


@pytest.mark.parametrize("text", ADMITTED)
def test_the_default_rule_admits_public_addresses(text: str) -> None:
    assert public_only(ipaddress.ip_address(text)) is None


@pytest.mark.parametrize(
    "text", ["64:ff9b::7f00:1", "2002:7f00:1::", "::127.0.0.1", "fec0::1", "224.0.0.1"]
)
def test_is_global_alone_would_have_admitted_these(text: str) -> None:
    address = ipaddress.ip_address(text)
    assert address.is_global  # the stdlib's answer on this Python...
    assert public_only(address) is not None  # ...and ours


def test_embedded_ipv4_unwraps_every_form() -> None:
    def unwrap(text: str) -> list[str]:
        return [str(a) for a in embedded_ipv4(ipaddress.IPv6Address(text))]

    assert unwrap("::ffff:1.2.3.4") == ["1.2.3.4"]
    assert unwrap("::1.2.3.4") == ["1.2.3.4"]
    assert unwrap("2002:102:304::") == ["1.2.3.4"]
    assert unwrap("64:ff9b::102:304") == ["1.2.3.4"]
    assert unwrap("2001:0:4136:e378:8000:63bf:80ff:fffe") == ["65.54.227.120", "127.0.0.1"]
    assert unwrap("2606:4700::1111") == []
    assert unwrap("::1") == []
    assert unwrap("::") == []


def test_any_address_admits_everything() -> None:
    assert any_address(ipaddress.ip_address("127.0.0.1")) is None
    assert any_address(ipaddress.ip_address("::1")) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://user:pass@example.com/", "credentials"),
        ("http://user@example.com/", "credentials"),
        ("http://a@b@evil.com/", "credentials"),
        ("http://127.0.0.1:80@evil.com/", "credentials"),
        ("http://example.com\\@evil.com/", "backslash"),
        ("http://example.com/\t", "control"),
        ("http://exa\nmple.com/", "control"),
        ("http://example.com/\r", "control"),
        ("http://example.com/\x00", "control"),
        ("http://example.com/a b", "whitespace"),
        ("http://example.com/\x7f", "control"),
        (" http://example.com/", "whitespace"),
        ("file:///etc/passwd", "scheme"),
        ("gopher://example.com/", "scheme"),
        ("ftp://example.com/", "scheme"),
        ("data:text/plain,hi", "scheme"),
        ("http+unix://%2Frun%2Fdocker.sock/", "scheme"),
        ("javascript:alert(1)", "scheme"),
        ("example.com/page", "scheme"),
        ("http:example.com", "host required"),
        ("http:///path", "host required"),
        ("http://[fe80::1%25eth0]/", "zone id"),
        ("http://example.com:6379/", "port 6379"),
        ("https://example.com:8443/", "port 8443"),
        ("http://example.com:0/", "port"),
        ("http://[::1/", "not a valid url"),
        ("http://0177.0.0.1/", "not a valid url"),
        ("http://" + "a" * MAX_URL_CHARS + ".com/", "longer than 2048"),
    ],
)
def test_bad_urls_are_refused_before_any_lookup(url: str, problem: str) -> None:
    with pytest.raises(URLRefused) as refused:
        parse_url(url)
    assert problem in refused.value.reason
    assert refused.value.field == "url"


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://example.com/", "example.com"),
        ("HTTPS://Example.COM/a?b#c", "example.com"),
        ("https://bücher.example/", "xn--bcher-kva.example"),
        ("http://example.com:80/", "example.com"),
        ("https://example.com:443/", "example.com"),
        ("http://[2606:4700::1111]/", "2606:4700::1111"),
        ("http://example.com/a%20b?q=%00", "example.com"),
    ],
)
def test_good_urls_parse_to_their_host(url: str, host: str) -> None:
    assert parse_url(url).raw_host.decode() == host


def test_any_port_when_ports_are_not_restricted() -> None:
    assert parse_url("http://example.com:6379/", allowed_ports=None).port == 6379
    assert parse_url("http://example.com:8080/", allowed_ports=[8080]).port == 8080
    with pytest.raises(URLRefused, match="port 80 "):
        parse_url("http://example.com/", allowed_ports=[8080])


def test_a_scheme_allowlist_can_narrow_to_https() -> None:
    with pytest.raises(URLRefused, match="scheme must be one of https"):
        parse_url("http://example.com/", schemes=["https"])
