"""A real CalDAV server for the calendar tests: Radicale on loopback, with authentication.

One server for the session (started with the interpreter running the tests, storage in a
temporary directory, an htpasswd file with one user); each test gets a calendar collection of
its own, made with ``MKCALENDAR``.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from xml.etree import ElementTree

import httpx
import pytest

from tests.support.calendars import PASSWORD, PASSWORD_ENV, USER


@dataclass(frozen=True)
class Radicale:
    origin: str
    """``http://127.0.0.1:<port>``."""

    def new_calendar(self) -> str:
        """A new, empty calendar collection of the user's, by URL (ending in a slash)."""
        url = f"{self.origin}/{USER}/{uuid.uuid4().hex}/"
        response = httpx.request("MKCALENDAR", url, auth=(USER, PASSWORD))
        assert response.status_code == 201, response.status_code
        return url

    def put(self, collection: str, name: str, ical: str) -> None:
        """Store a resource directly, as another client of the same calendar would."""
        response = httpx.put(
            f"{collection}{name}",
            content=ical.encode(),
            headers={"Content-Type": "text/calendar"},
            auth=(USER, PASSWORD),
        )
        assert response.status_code in (201, 204), response.status_code

    def resources(self, collection: str) -> list[str]:
        """The names of the resources in ``collection`` (a PROPFIND of depth 1)."""
        response = httpx.request(
            "PROPFIND", collection, headers={"Depth": "1"}, auth=(USER, PASSWORD)
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


@pytest.fixture(scope="session")
def radicale(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Radicale]:
    root = tmp_path_factory.mktemp("radicale")
    (root / "users").write_text(f"{USER}:{PASSWORD}\n")
    port = _free_port()
    config = root / "config"
    config.write_text(
        textwrap.dedent(
            f"""
            [server]
            hosts = 127.0.0.1:{port}
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
        )
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "radicale", "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        origin = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.TransportError):
                httpx.get(origin, timeout=1)
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


@pytest.fixture
def collection(radicale: Radicale) -> str:
    """A new, empty calendar collection of the user's, by URL (ending in a slash)."""
    return radicale.new_calendar()


@pytest.fixture
def password(monkeypatch: pytest.MonkeyPatch) -> str:
    """The worker reads the CalDAV password from its environment when a call runs."""
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    return PASSWORD
