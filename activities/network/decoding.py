"""Content decoding within a budget: gzip and deflate, never past the ceiling, whatever the
ratio of the compression."""

from __future__ import annotations

import zlib
from typing import Any

from toolcalls.activities.network.failures import TooLarge, TransportFailed


class Decoder:
    """Content decoding that never produces more than the budget, whatever the ratio."""

    def __init__(self, encoding: str, budget: int) -> None:
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise TransportFailed(f"unsupported content-encoding {encoding!r}", transient=False)
        self._coding = codings[0] if codings else None
        self._budget = budget
        self._produced = 0
        self._raw_deflate_tried = False
        self._zlib = self._new()

    def _new(self, raw: bool = False) -> Any:
        if self._coding in ("gzip", "x-gzip"):
            return zlib.decompressobj(zlib.MAX_WBITS | 16)
        if self._coding == "deflate":
            return zlib.decompressobj(-zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
        return None

    def _take(self, out: bytes) -> bytes:
        self._produced += len(out)
        if self._produced > self._budget:
            raise TooLarge(f"decoded body exceeds {self._budget} bytes")
        return out

    def decode(self, data: bytes) -> bytes:
        if self._zlib is None:
            return self._take(data)
        parts: list[bytes] = []
        pending = data
        while pending and not self._zlib.eof:
            # max_length bounds each step: a bomb stops at budget + 1 bytes, never expands whole.
            room = self._budget - self._produced + 1
            try:
                out = self._zlib.decompress(pending, room)
            except zlib.error as error:
                if self._coding == "deflate" and not self._raw_deflate_tried:
                    # Servers send raw deflate under "deflate" often enough; retry once as raw.
                    self._raw_deflate_tried = True
                    self._zlib = self._new(raw=True)
                    continue
                raise TransportFailed("body does not decode", transient=False) from error
            self._raw_deflate_tried = True
            parts.append(self._take(out))
            pending = self._zlib.unconsumed_tail
        return b"".join(parts)

    def flush(self) -> bytes:
        if self._zlib is None or self._zlib.eof:
            return b""
        try:
            return self._take(self._zlib.flush(self._budget - self._produced + 1))
        except zlib.error as error:
            raise TransportFailed("body does not decode", transient=False) from error
