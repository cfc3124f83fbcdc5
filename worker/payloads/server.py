"""``toolcalls codec-server``: Temporal's remote codec protocol, for its Web UI and CLI.

``POST /encode`` and ``POST /decode`` (also under a namespace, ``/{namespace}/decode``, for the
CLI's endpoint templating) take and return ``{"payloads": [...]}``, each payload in protobuf
JSON form (base64 metadata and data), and run them through the deployment's ``EncryptionCodec``.

Who may call it, checked in this order on every request:

- **origin**: a request that carries an ``Origin`` header (a browser's) must come from one of
  ``[codec.server] origins`` (the Temporal UI's); any other is refused with 403 and gets no CORS
  headers, preflight included. A request without ``Origin`` (the ``temporal`` CLI, a script) is
  not a browser's and needs no CORS.
- **token**: ``Authorization: Bearer <token>`` with one of the tokens in the variable
  ``tokens_env`` (``name=token`` pairs); a missing one is 401, a wrong one 403. The UI sends the
  signed-in user's access token when its codec setting "Pass access token" is on, so an
  authenticating proxy that swaps it for a codec token, or a per-user token in the CLI's
  ``--codec-auth``, admits callers. ``allow_anonymous`` (loopback only) admits callers without
  one, for a single-user dev host.
- **namespace**: the ``X-Namespace`` header (or the path's namespace) must be one of
  ``namespaces`` when that list is set.

Each decode is logged with the token's name, the namespace and the number of payloads.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

from toolcalls.activities.family import Extra
from toolcalls.worker.config import Config, ConfigError
from toolcalls.worker.listen import bind
from toolcalls.worker.payloads.codec import PayloadKeyError
from toolcalls.worker.payloads.converter import payload_pipeline
from toolcalls.worker.payloads.settings import CodecServerSection, is_loopback

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request

SERVER_EXTRA = Extra("codec", ("cryptography", "starlette", "uvicorn"))
MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""A request body past this is refused: a UI page decodes a history's payloads, each at most
Temporal's 2 MiB, in batches."""
MIN_TOKEN_CHARS = 16
CORS_MAX_AGE = "600"
_PATH = re.compile(r"/(?:(?P<namespace>[^/]+)/)?(?P<action>encode|decode)")
_TOKEN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")

log = logging.getLogger("toolcalls.codec")


def parse_tokens(text: str, source: str) -> dict[str, str]:
    """``name=token`` pairs separated by commas: the callers the codec server admits.

    Raises:
        ConfigError: naming ``source`` and the bad entry, never a token.
    """
    tokens: dict[str, str] = {}
    for number, entry in enumerate((e.strip() for e in text.split(",") if e.strip()), 1):
        name, sep, token = (part.strip() for part in entry.partition("="))
        if not sep or not _TOKEN_NAME.fullmatch(name):
            raise ConfigError(f"{source}: entry {number} is not name=token")
        if name in tokens:
            raise ConfigError(f"{source}: {name!r} is listed twice")
        if len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(f"{source}: the token of {name!r} has fewer than {MIN_TOKEN_CHARS}")
        tokens[name] = token
    if not tokens:
        raise ConfigError(f"{source}: no tokens (expected name=token pairs)")
    return tokens


@dataclass(frozen=True)
class Refusal(Exception):
    status: int
    reason: str


class CodecService:
    """The protocol and the checks, independent of the HTTP framework."""

    def __init__(
        self, codec: PayloadCodec, section: CodecServerSection, tokens: Mapping[str, str]
    ) -> None:
        self.codec = codec
        self.section = section
        self.tokens = dict(tokens)
        self.origins = frozenset(section.origins)

    def cors_headers(self, origin: str | None) -> dict[str, str]:
        """The CORS headers for an allowed ``origin``; none for a request without one."""
        if origin is None:
            return {}
        return {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": "POST, OPTIONS",
            "Access-Control-Allow-Headers": "Authorization, Content-Type, X-Namespace",
            "Access-Control-Allow-Credentials": "true",
            "Access-Control-Max-Age": CORS_MAX_AGE,
            "Vary": "Origin",
        }

    def allowed(self, origin: str | None) -> bool:
        """Whether a request from ``origin`` may be served (``None``: not a browser's)."""
        return origin is None or origin.lower() in self.origins

    def check_origin(self, origin: str | None) -> None:
        if not self.allowed(origin):
            raise Refusal(403, f"origin {origin} is not allowed")

    def caller(self, authorization: str | None) -> str:
        """The name of the token presented, or ``anonymous`` where that is allowed."""
        if authorization is None:
            if self.section.allow_anonymous:
                return "anonymous"
            raise Refusal(401, "missing bearer token")
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            raise Refusal(401, "the authorization is not a bearer token")
        found = None
        for name, token in self.tokens.items():
            # Every token is compared, so the time taken says nothing about which one is near.
            if hmac.compare_digest(token.encode(), presented.strip().encode()):
                found = name
        if found is None:
            raise Refusal(403, "token not accepted")
        return found

    def check_namespace(self, namespace: str | None) -> str:
        name = namespace or ""
        if self.section.namespaces and name not in self.section.namespaces:
            raise Refusal(403, f"namespace {name or '(none)'} is not served here")
        return name

    async def run(self, action: str, body: bytes) -> bytes:
        """Encode or decode the payloads of a request ``body``; the response body."""
        try:
            request = json.loads(body)
            if not isinstance(request, dict) or not isinstance(request.get("payloads"), list):
                raise ValueError("expected an object with a payloads array")
            payloads = json_format.ParseDict({"payloads": request["payloads"]}, Payloads())
        except (ValueError, json_format.ParseError) as exc:
            raise Refusal(400, f"malformed request: {exc}") from None
        try:
            if action == "decode":
                out = await self.codec.decode(payloads.payloads)
            else:
                out = await self.codec.encode(payloads.payloads)
        except PayloadKeyError as exc:
            raise Refusal(422, str(exc)) from None
        answer = json_format.MessageToDict(Payloads(payloads=out))
        return json.dumps({"payloads": answer.get("payloads", [])}).encode()


def build_service(config: Config, environ: Mapping[str, str]) -> CodecService:
    """The codec server of ``config``: its ``[codec]`` keys and ``[codec.server]`` callers.

    Raises:
        ConfigError: no ``[codec]`` keys or ``[codec.server]`` section, a missing extra, tokens
            that cannot be read.
    """
    missing = SERVER_EXTRA.missing()
    if missing:
        raise ConfigError(
            f"codec.server: the codec server needs the codec extra (missing "
            f"{', '.join(missing)}): {SERVER_EXTRA.hint}"
        )
    section = config.codec.server
    if not config.codec.enabled or section is None:
        raise ConfigError(
            "codec.server: toolcalls codec-server needs [codec] keys_env or keys_file and a "
            "[codec.server] section (tokens_env, or allow_anonymous on loopback)"
        )
    tokens: dict[str, str] = {}
    if section.tokens_env is not None:
        text = environ.get(section.tokens_env, "")
        if not text.strip():
            raise ConfigError(
                f"codec.server.tokens_env: the variable {section.tokens_env} is not set"
            )
        tokens = parse_tokens(text, f"codec.server.tokens_env: {section.tokens_env}")
    codec = payload_pipeline(config, environ).codec
    assert codec is not None
    return CodecService(codec, section, tokens)


def app(service: CodecService) -> Starlette:
    """The ASGI application (Starlette) serving ``service``."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def handle(request: Request) -> Response:
        origin = request.headers.get("origin")
        # Only an allowed origin (or none: not a browser) ever sees a CORS header.
        cors = service.cors_headers(origin) if service.allowed(origin) else {}
        action = "?"
        try:
            service.check_origin(origin)
            if request.method == "OPTIONS":
                # A preflight carries no credentials: only the origin is checked.
                if origin is None:
                    raise Refusal(405, "OPTIONS is a browser's preflight; send POST")
                return Response(status_code=204, headers=cors)
            match = _PATH.fullmatch(request.url.path)
            if match is None:
                raise Refusal(404, "unknown path: use /encode or /decode")
            action = match.group("action")
            caller = service.caller(request.headers.get("authorization"))
            namespace = service.check_namespace(
                request.headers.get("x-namespace") or match.group("namespace")
            )
            answer = await service.run(action, await _body(request))
        except Refusal as refusal:
            headers = dict(cors)
            if refusal.status == 401:
                headers["WWW-Authenticate"] = "Bearer"
            log.info("refused %s %s: %s", request.method, request.url.path, refusal.reason)
            return JSONResponse({"error": refusal.reason}, refusal.status, headers=headers)
        log.info("%s for %s in namespace %s", action, caller, namespace or "-")
        return Response(answer, media_type="application/json", headers=cors)

    methods = ["POST", "OPTIONS"]
    return Starlette(
        routes=[
            Route("/{action:str}", handle, methods=methods),
            Route("/{namespace:str}/{action:str}", handle, methods=methods),
        ]
    )


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:
        raise Refusal(413, f"the request is over {MAX_REQUEST_BYTES} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise Refusal(413, f"the request is over {MAX_REQUEST_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def split_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8081`` for IPv6) as a host and a port.

    Raises:
        ConfigError: not of that form.
    """
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"codec server: --listen {listen!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


async def run(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``toolcalls codec-server``: serve until SIGINT or SIGTERM."""
    import uvicorn

    service = build_service(config, environ)
    listen = args.listen or service.section.listen
    host, port = split_listen(listen)
    if service.section.allow_anonymous and not is_loopback(listen):
        raise ConfigError(f"codec.server.allow_anonymous needs a loopback address, not {listen}")
    sock = bind(host, port, "codec server")
    server = uvicorn.Server(
        uvicorn.Config(app(service), host=host, port=port, log_level="warning", access_log=False)
    )
    try:
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.05)
        if server.started:
            origins = ", ".join(service.section.origins) or "none"
            print(f"codec server at http://{listen} (origins: {origins})", flush=True)
        await serving
    finally:
        sock.close()
    if not server.started:
        raise ConfigError(f"codec server: cannot listen on {listen}")
    return 0
