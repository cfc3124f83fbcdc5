"""The rules that keep a configured HTTP API tool on its origin and base path.

Pure functions, shared by the deployment's settings (``HttpToolSettings``) and the tool
(``toolcalls.activities.network.http_api``). The URL a call reaches is the configured base URL
followed by the model's path, joined as text, never by URL resolution: resolution lets ``../``, an
absolute URL or ``//host`` replace the base path or the host (httpx's ``base_url`` merge does
exactly that). So the path is checked first and refused when it could mean anything but "below the
base": traversal segments, a scheme or authority, backslashes, embedded queries and fragments,
control characters, encoded separators and dots, double encoding, and characters that Unicode
normalisation turns into any of these (two U+FF0E are ``..`` after NFKC).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from urllib.parse import quote, unquote_to_bytes, urlsplit

from toolcalls.activities.network.urls import MAX_URL_CHARS

MAX_PATH_CHARS = 2_048
MAX_QUERY_PARAMS = 100

_SCHEMES = ("http", "https")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP header field name (RFC 9110 token)."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_REFUSED_ESCAPES = {
    0x25: "an encoded '%' (double encoding)",
    0x2E: "an encoded '.'",
    0x2F: "an encoded '/'",
    0x5C: "an encoded '\\'",
}
_PATH_SAFE = "/%!$&'()*+,;=:@-._~"
"""Characters a path keeps as written; anything else (spaces, non-ASCII) is percent-encoded."""
_REFUSED_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")
"""Control, format (bidi overrides, zero-width), surrogate, private-use and separator chars."""

RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "expect",
        "proxy-connection",
        "proxy-authorization",
    }
)
"""Headers the tool or the HTTP client owns: framing, routing, and the body's type."""


class PathProblem(ValueError):
    """A path, query or configured value the rules refuse; the message says why."""


def check_path(path: str) -> str:
    """``path`` relative to the base URL (one leading ``/`` dropped), or ``PathProblem``."""
    if len(path) > MAX_PATH_CHARS:
        raise PathProblem(f"has {len(path)} characters; the limit is {MAX_PATH_CHARS}")
    _refuse_characters(path, "")
    if "\\" in path:
        raise PathProblem("must not contain a backslash")
    if "?" in path or "#" in path:
        raise PathProblem("must not contain '?' or '#'; put parameters in query")
    if any(ch.isspace() for ch in path):
        raise PathProblem("must not contain whitespace; percent-encode it (%20)")
    relative = path[1:] if path.startswith("/") else path
    if relative.startswith("/"):
        raise PathProblem("must not start with '//' (another host)")
    segments = relative.split("/")
    if ":" in segments[0]:
        raise PathProblem(
            "must be relative to the base URL, not an absolute URL "
            "(its first segment must not contain ':')"
        )
    for index, segment in enumerate(segments):
        if segment in (".", ".."):
            raise PathProblem(f"must not contain a {segment!r} segment")
        if not segment and index != len(segments) - 1:
            raise PathProblem("must not contain an empty segment ('//')")
    _check_escapes(relative)
    return relative


def _check_escapes(path: str) -> None:
    if _BAD_ESCAPE.search(path):
        raise PathProblem("has a '%' that does not start a %XX escape")
    for match in _ESCAPE.finditer(path):
        byte = int(match.group(1), 16)
        if byte in _REFUSED_ESCAPES:
            raise PathProblem(f"must not contain {_REFUSED_ESCAPES[byte]} ({match.group()})")
        if byte < 0x20 or byte == 0x7F:
            raise PathProblem("must not contain an encoded control character")
    try:
        decoded = unquote_to_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise PathProblem("its percent-escapes must encode UTF-8") from None
    _refuse_characters(decoded, "decoded, it")
    normal = unicodedata.normalize("NFKC", decoded)
    if normal != decoded:
        changed = next(ch for ch in decoded if unicodedata.normalize("NFKC", ch) != ch)
        raise PathProblem(
            f"contains U+{ord(changed):04X}, which Unicode normalisation changes; "
            "use the plain character"
        )


def _refuse_characters(text: str, what: str) -> None:
    for ch in text:
        if unicodedata.category(ch) in _REFUSED_CATEGORIES:
            subject = f"{what} " if what else ""
            raise PathProblem(f"{subject}must not contain control characters (U+{ord(ch):04X})")


def build_url(base_url: str, path: str, query: Sequence[tuple[str, str]]) -> str:
    """The full URL: ``base_url`` (ending in ``/``), the checked path, the encoded query (its
    ``(name, value)`` pairs in order)."""
    try:
        relative = check_path(path)
    except PathProblem as exc:
        raise PathProblem(f"path {exc}") from None
    url = base_url + quote(relative, safe=_PATH_SAFE)
    if query:
        if len(query) > MAX_QUERY_PARAMS:
            raise PathProblem(f"query has {len(query)} parameters; the limit is {MAX_QUERY_PARAMS}")
        url += "?" + "&".join(
            f"{quote(key, safe='')}={quote(value, safe='')}" for key, value in query
        )
    if len(url) > MAX_URL_CHARS:
        raise PathProblem(f"the URL would have {len(url)} characters; the limit is {MAX_URL_CHARS}")
    return url


def normalise_base_url(url: str, *, allow_http: bool) -> str:
    """``url`` checked (scheme; no userinfo, query or fragment; a plain path), ending in ``/``."""
    _refuse_characters(url, "base_url")
    if any(ch.isspace() or ch == "\\" for ch in url):
        raise PathProblem("base_url must not contain whitespace or backslashes")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise PathProblem("base_url must be an http or https URL")
    if scheme == "http" and not allow_http:
        raise PathProblem("base_url is plain http; use https, or set allow_http = true")
    if "@" in parts.netloc:
        raise PathProblem("base_url must not contain credentials; use headers_from_env")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise PathProblem("base_url must not have a query or fragment")
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise PathProblem(f"base_url has an invalid port: {exc}") from None
    if not host:
        raise PathProblem("base_url has no host")
    path = parts.path.removesuffix("/")
    if path:
        try:
            check_path(path)
        except PathProblem as exc:
            raise PathProblem(f"base_url path {exc}") from None
    netloc = parts.netloc.rsplit("@", 1)[-1]
    netloc = netloc.lower() if port is None else netloc[: netloc.rfind(":")].lower() + f":{port}"
    return f"{scheme}://{netloc}{path}/"


def check_header_name(name: str) -> str:
    """``name`` if it is an HTTP field name a deployment may configure."""
    if not _TOKEN.fullmatch(name):
        raise PathProblem(f"{name!r} is not a valid header name")
    if name.lower() in RESERVED_HEADERS:
        raise PathProblem(f"{name} is set by the tool or the HTTP client, not by configuration")
    return name


def check_header_value(value: str) -> str | None:
    """Why ``value`` cannot be sent as a header value (CR, LF, NUL, non-ASCII), or ``None``."""
    for ch in value:
        if ch != "\t" and not " " <= ch <= "~":
            return f"contains U+{ord(ch):04X}; header values are printable ASCII"
    return None


def check_env_name(name: str) -> str:
    """``name`` if it is a plausible environment variable name."""
    if not _ENV_NAME.fullmatch(name):
        raise PathProblem(f"{name!r} is not an environment variable name")
    return name
