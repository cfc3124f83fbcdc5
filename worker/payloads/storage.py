"""Payloads outside history: ``LocalStorageDriver`` for one host, the SDK's S3 driver for clusters.

A payload at or over ``[payloads] threshold_bytes`` (measured after the codec, so what is stored
is already encrypted when ``[codec]`` is on) goes to the store; history keeps a claim naming the
driver and the stored object. Objects are named by the SHA-256 of their bytes, so storing the same
payload twice stores it once, and a retrieved object is checked against its claim's digest.
Nothing deletes stored objects: see docs/payloads.md for retention and ``toolcalls payloads
prune``.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.contrib.aws.s3driver import S3StorageDriverClient
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

LOCAL_DRIVER = "toolcalls.local"
"""The local driver's name, recorded in every claim it writes."""
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_OBJECT = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,254})/([0-9a-f]{2})/([0-9a-f]{64})")


class PayloadStoreError(RuntimeError):
    """A payload cannot be stored or retrieved; the message names the store and the object."""


def _namespace_dir(namespace: str | None) -> str:
    """A directory name for a namespace: itself when it is a plain name, else its digest."""
    if namespace and _NAMESPACE.fullmatch(namespace) and namespace not in (".", ".."):
        return namespace
    return "ns-" + hashlib.sha256((namespace or "").encode()).hexdigest()[:32]


class LocalStorageDriver(StorageDriver):
    """Payloads as files below ``root``: ``<namespace>/<first two hex digits>/<sha256>``.

    Every worker and client of the deployment must reach the same directory (one host, or a
    shared mount); a claim read where the directory is missing or different fails with the
    object's name, never with other data.
    """

    def __init__(self, root: Path, *, max_payload_bytes: int, name: str = LOCAL_DRIVER) -> None:
        self.root = root
        self.max_payload_bytes = max_payload_bytes
        self._name = name

    def name(self) -> str:
        return self._name

    def type(self) -> str:
        return LOCAL_DRIVER

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        target = context.target
        namespace = _namespace_dir(target.namespace if target is not None else None)
        return [
            await asyncio.to_thread(self._store_one, namespace, payload.SerializeToString())
            for payload in payloads
        ]

    def _store_one(self, namespace: str, data: bytes) -> StorageDriverClaim:
        if len(data) > self.max_payload_bytes:
            raise PayloadStoreError(
                f"payload store {self.root}: a payload of {len(data)} bytes is over the store's "
                f"limit of {self.max_payload_bytes} bytes"
            )
        digest = hashlib.sha256(data).hexdigest()
        relative = f"{namespace}/{digest[:2]}/{digest}"
        path = self.root / relative
        try:
            if not path.exists():
                _write_atomically(path, data)
            else:
                # A newer modification time keeps a payload still in use out of ``prune``.
                os.utime(path)
        except OSError as exc:
            raise PayloadStoreError(
                f"payload store {self.root}: cannot write {relative}: {exc.strerror or exc}"
            ) from None
        return StorageDriverClaim(claim_data={"object": relative, "sha256": digest})

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return [await asyncio.to_thread(self._retrieve_one, claim.claim_data) for claim in claims]

    def _retrieve_one(self, claim: Mapping[str, str]) -> Payload:
        relative, digest = claim.get("object", ""), claim.get("sha256", "")
        match = _OBJECT.fullmatch(relative)
        # A claim comes from history: it may name only an object of this store's own layout.
        if not match or match.group(3) != digest or not digest.startswith(match.group(2)):
            raise PayloadStoreError(f"payload store {self.root}: malformed claim {dict(claim)}")
        path = self.root / relative
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise PayloadStoreError(
                f"payload store {self.root}: stored payload {relative} is missing: this process "
                "does not reach the deployment's store (another host, an unmounted directory), "
                "or the payload was pruned"
            ) from None
        except OSError as exc:
            raise PayloadStoreError(
                f"payload store {self.root}: cannot read {relative}: {exc.strerror or exc}"
            ) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise PayloadStoreError(
                f"payload store {self.root}: stored payload {relative} does not match its claim's "
                "digest: the file was altered"
            )
        payload = Payload()
        payload.ParseFromString(data)
        return payload


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, synced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def prune(root: Path, older_than_seconds: float, *, now: Callable[[], float] = time.time) -> int:
    """Delete stored payloads not written or stored again for ``older_than_seconds``; how many.

    Only files of the store's own layout are touched.
    """
    cutoff = now() - older_than_seconds
    removed = 0
    for path in root.glob("*/*/*"):
        relative = path.relative_to(root).as_posix()
        if not _OBJECT.fullmatch(relative) or not _DIGEST.fullmatch(path.name):
            continue
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed


class SessionS3Client(S3StorageDriverClient):
    """An ``S3StorageDriverClient`` that opens an aioboto3 client for each operation.

    The SDK's adapter wraps one open aioboto3 client, which lives inside an ``async with``; a
    worker or command builds its converter before any event loop runs, so each operation opens
    its own client (large payloads are few; the cost is a client per stored payload).
    """

    def __init__(self, *, region: str | None, endpoint_url: str | None) -> None:
        import aioboto3

        self._session = aioboto3.Session()
        self._options: dict[str, Any] = {"region_name": region, "endpoint_url": endpoint_url}

    async def _call(self, method: str, **kwargs: Any) -> Any:
        from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client

        async with self._session.client("s3", **self._options) as client:
            return await getattr(new_aioboto3_client(client), method)(**kwargs)

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        await self._call("put_object", bucket=bucket, key=key, data=data)

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        found: bool = await self._call("object_exists", bucket=bucket, key=key)
        return found

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        data: bytes = await self._call("get_object", bucket=bucket, key=key)
        return data

    def describe(self) -> Mapping[str, str]:
        return {k: str(v) for k, v in self._options.items() if v}
