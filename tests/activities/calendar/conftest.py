"""A real CalDAV server for the calendar tests: Radicale on loopback, with authentication.

One server for the session (started with the interpreter running the tests, storage in a
temporary directory, an htpasswd file with one user); each test gets a calendar collection of
its own, made with ``MKCALENDAR``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import ssl
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import httpx
import pytest
import trustme

from tests.support.calendars import PASSWORD, PASSWORD_ENV, USER


@dataclass(frozen=True)
class Radicale:
    origin: str
    """``http://127.0.0.1:<port>``."""

    verify: ssl.SSLContext | bool = True
    """How the test's own requests verify the server (the CA's file for the TLS server)."""

    def new_calendar(self) -> str:
        """A new, empty calendar collection of the user's, by URL (ending in a slash)."""
        url = f"{self.origin}/{USER}/{uuid.uuid4().hex}/"
        response = httpx.request("MKCALENDAR", url, auth=(USER, PASSWORD), verify=self.verify)
        assert response.status_code == 201, response.status_code
        return url

    def put(self, collection: str, name: str, ical: str) -> None:
        """Store a resource directly, as another client of the same calendar would."""
        response = httpx.put(
            f"{collection}{name}",
            content=ical.encode(),
            headers={"Content-Type": "text/calendar"},
            auth=(USER, PASSWORD),
            verify=self.verify,
        )
        assert response.status_code in (201, 204), response.status_code

    def resources(self, collection: str) -> list[str]:
        """The names of the resources in ``collection`` (a PROPFIND of depth 1)."""
        response = httpx.request(
            "PROPFIND",
            collection,
            headers={"Depth": "1"},
            auth=(USER, PASSWORD),
            verify=self.verify,
        )
        assert response.status_code == 207, response.status_code
        path = httpx.URL(collection).path
        hrefs = ElementTree.fromstring(response.content).iter("{DAV:}href")
        return sorted(
            href.text.removeprefix(path)
            for href in hrefs
            if href.text and href.text.startswith(path) and href.text != path
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextlib.contextmanager
def _running_radicale(root: Path, tls: tuple[Path, Path] | None = None) -> Iterator[Radicale]:
    """Radicale on a loopback port, its storage under ``root``; https with ``tls`` (a
    certificate chain and its key)."""
    (root / "users").write_text(f"{USER}:{PASSWORD}\n")
    port = _free_port()
    https = f"ssl = True\ncertificate = {tls[0]}\nkey = {tls[1]}" if tls else ""
    config = root / "config"
    config.write_text(
        textwrap.dedent(
            f"""
            [server]
            hosts = 127.0.0.1:{port}
            {{ssl}}
            [auth]
            type = htpasswd
            htpasswd_filename = {root / "users"}
            htpasswd_encryption = plain
            [rights]
            type = owner_only
            [storage]
            filesystem_folder = {root / "collections"}
            [logging]
            level = error
            """
        ).replace("{ssl}", https)
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "radicale", "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        origin = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.TransportError):
                httpx.get(origin, timeout=1, verify=False)
                break
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "radicale did not start"
            time.sleep(0.1)
        yield Radicale(origin)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stderr is not None:
            server.stderr.close()


@pytest.fixture(scope="session")
def radicale(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Radicale]:
    with _running_radicale(tmp_path_factory.mktemp("radicale")) as server:
        yield server


@dataclass(frozen=True)
class TLSRadicale:
    server: Radicale
    ca_file: Path
    """The private CA that signed the server's certificate (for 127.0.0.1)."""


@pytest.fixture(scope="session")
def radicale_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSRadicale]:
    root = tmp_path_factory.mktemp("radicale-tls")
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1")
    chain, key, ca_file = root / "chain.pem", root / "key.pem", root / "ca.pem"
    chain.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    with _running_radicale(root, (chain, key)) as server:
        trusting = ssl.create_default_context(cafile=str(ca_file))
        yield TLSRadicale(dataclasses.replace(server, verify=trusting), ca_file)


@pytest.fixture
def collection(radicale: Radicale) -> str:
    """A new, empty calendar collection of the user's, by URL (ending in a slash)."""
    return radicale.new_calendar()


@pytest.fixture
def password(monkeypatch: pytest.MonkeyPatch) -> str:
    """The worker reads the CalDAV password from its environment when a call runs."""
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    return PASSWORD
