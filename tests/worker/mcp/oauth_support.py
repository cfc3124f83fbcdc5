"""An authorization server for the OAuth tests, as far as a resource server sees one: signing keys
made by the test, their JWKS served over loopback HTTP (or written to a file), access tokens."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://auth.example.test/"
OTHER_ISSUER = "https://other-auth.example.test/"
FILE_ISSUER = "https://file-auth.example.test/"


@dataclass
class Signer:
    """One issuer's signing key, its ``kid`` and algorithm."""

    issuer: str
    kid: str
    alg: str = "RS256"
    key: Any = field(default=None)

    def __post_init__(self) -> None:
        if self.key is None:
            self.key = (
                ec.generate_private_key(ec.SECP256R1())
                if self.alg.startswith("ES")
                else rsa.generate_private_key(public_exponent=65537, key_size=2048)
            )

    def jwk(self) -> dict[str, Any]:
        algorithm = ECAlgorithm if self.alg.startswith("ES") else RSAAlgorithm
        found: dict[str, Any] = algorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {**found, "kid": self.kid, "use": "sig", "alg": self.alg}

    def token(
        self,
        *,
        sub: str = "alice",
        aud: str | list[str] | None = None,
        scope: str | None = "tools:all",
        lifetime: float = 300,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "sub": sub,
            "iat": now,
            "exp": now + int(lifetime),
            **claims,
        }
        if aud is not None:
            payload["aud"] = aud
        if scope is not None:
            payload["scope"] = scope
        return jwt.encode(payload, self.key, algorithm=self.alg, headers={"kid": self.kid})


def jwks(*signers: Signer) -> dict[str, Any]:
    return {"keys": [signer.jwk() for signer in signers]}


class JwksServer:
    """A loopback HTTP server answering ``GET /jwks.json`` with the current key set."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.fetches = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.fetches += 1
                body = json.dumps(owner.document).encode()
                self.send_response(200 if self.path == "/jwks.json" else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"

    @contextmanager
    def running(self) -> Iterator[JwksServer]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join(5)


def unsigned(claims: dict[str, Any]) -> str:
    """A token with ``alg: none`` (no signature)."""
    return jwt.encode(claims, "", algorithm="none")


def hmac_with_public_key(signer: Signer, claims: dict[str, Any]) -> str:
    """A token "signed" with HS256 using the issuer's public key (its PEM) as the secret: what a
    verifier that lets the token choose its algorithm would accept."""
    pem = signer.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = {"alg": "HS256", "typ": "JWT", "kid": signer.kid}
    parts = [_b64(json.dumps(part).encode()) for part in (header, claims)]
    signature = hmac.new(pem, ".".join(parts).encode(), hashlib.sha256).digest()
    return ".".join([*parts, _b64(signature)])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
