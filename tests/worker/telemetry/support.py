"""Reading a worker's ``/metrics`` (the Prometheus text format) and its probes."""

from __future__ import annotations

import asyncio
import re
import time

import httpx

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> Samples:
    """Every sample of an exposition, by metric name and labels."""
    samples: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        name, labels, value = match.groups()
        samples[(name, frozenset(_LABEL.findall(labels or "")))] = float(value)
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples that carry ``labels`` (whatever their other labels)."""
    wanted = set(labels.items())
    return sum(value for (n, have), value in samples.items() if n == name and wanted <= have)


def label_values(samples: Samples, name: str, label: str) -> set[str]:
    return {dict(have)[label] for (n, have) in samples if n == name and label in dict(have)}


async def scrape(port: int) -> Samples:
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        response = await http.get(f"http://127.0.0.1:{port}/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


async def probe(port: int, path: str) -> int:
    """The status ``path`` answers with, or 0 while nothing listens."""
    try:
        async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
            return (await http.get(f"http://127.0.0.1:{port}{path}")).status_code
    except httpx.TransportError:
        return 0


async def until(port: int, path: str, status: int, timeout: float = 60) -> None:
    """Poll ``path`` until it answers ``status`` (bounded generously, to catch a hang)."""
    deadline = time.monotonic() + timeout
    while (got := await probe(port, path)) != status:
        assert time.monotonic() < deadline, f"{path} answered {got}, never {status}"
        await asyncio.sleep(0.1)


async def settled(
    port: int, name: str, expected: float, timeout: float = 30, **labels: str
) -> Samples:
    """Scrape until ``name`` reaches ``expected`` for ``labels`` (metrics are exported a moment
    after they are recorded); the last scrape. Not reached within ``timeout``, the test fails."""
    deadline = time.monotonic() + timeout
    while True:
        samples = await scrape(port)
        reached = total(samples, name, **labels)
        if reached >= expected:
            return samples
        assert time.monotonic() < deadline, f"{name} {labels}: {reached} after {timeout} s"
        await asyncio.sleep(0.2)
