"""Large results outside history on the real dev server: the local store, the SDK's S3 driver
against an S3-compatible server on loopback, and replay of histories that hold claims."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import (
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)

from tests.support.payloads import decoded_data, payloads_in
from tests.worker.payloads.conftest import Deployed, Deployment
from tests.worker.payloads.test_encryption import plain_history
from tests.worker.support import free_port, one_line, toolcalls, write_config
from toolcalls.worker.config import parse_config
from toolcalls.worker.payloads.converter import data_converter
from toolcalls.worker.payloads.storage import LocalStorageDriver, PayloadStoreError
from toolcalls.workflows.models.call import CallStatus, ToolCallRequest, ToolCallResult
from toolcalls.workflows.models.limits import check_request

CLAIM = "temporal.api.sdk.v1.ExternalStorageReference"
STORE = """
[payloads]
store = "{store}"
max_result_bytes = 8388608
[documents]
roots = ["{docs}"]
max_output_chars = 6000000
"""


def big_text(size: int) -> str:
    """``size`` bytes of numbered ASCII lines, none like another."""
    lines, total, number = [], 0, 0
    while total < size:
        line = f"line {number:07d} of a document too large for one Temporal payload\n"
        lines.append(line)
        total += len(line)
        number += 1
    return "".join(lines)[:size]


def claims(history: str) -> list[dict[str, Any]]:
    """The external-storage claims in an exported history."""
    found = []
    for payload in payloads_in(json.loads(history)):
        encoding = decoded_data({"data": payload["metadata"]["encoding"]}).decode()
        kind = payload["metadata"].get("messageType")
        if encoding == "json/protobuf" and kind and decoded_data({"data": kind}).decode() == CLAIM:
            found.append(json.loads(decoded_data(payload)))
    return found


def with_store(deployment: Deployment, tmp_path: Path, store: str, extra: str = "") -> Deployed:
    docs = tmp_path / "docs"
    local = f'[payloads.local]\npath = "{tmp_path / "payloads"}"\n' if store == "local" else ""
    # [documents] is replaced: the conftest's own section would be a duplicate table.
    deployed = deployment(STORE.format(store=store, docs=docs) + local + extra)
    text = deployed.config.read_text().replace(f'[documents]\nroots = ["{docs}"]\n', "", 1)
    deployed.config.write_text(text)
    return deployed


async def read_big(
    deployed: Deployed, text: str, workflow_id: str, env: dict[str, str] | None = None
) -> ToolCallResult:
    (deployed.docs / "big.txt").write_text(text)
    args = json.dumps({"path": str(deployed.docs / "big.txt")})
    done = await deployed.run(
        "call", "read_document", args, "--id", workflow_id, "--json", timeout=180, env=env
    )
    assert done.code == 0, done.stderr[-2000:]
    return ToolCallResult.model_validate_json(done.stdout)


async def test_a_5_mib_document_comes_back_whole_and_history_holds_a_claim(
    deployment: Deployment, client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    deployed = with_store(deployment, tmp_path, "local")
    text = big_text(5 * 1024 * 1024)
    workflow_id = f"big-{uuid.uuid4()}"
    async with deployed.worker(client, monkeypatch):
        result = await read_big(deployed, text, workflow_id)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output is not None
    assert not result.output["truncated"]
    assert [section["text"] for section in result.output["sections"]] == [text]

    history = await plain_history(deployed.address, workflow_id)
    assert len(history) < 256 * 1024
    assert "line 0000001" not in history
    found = claims(history)
    # The tool's result, and the call's result around it, are claims to the local store.
    assert len(found) >= 2
    assert {claim["driverName"] for claim in found} == {"toolcalls.local"}
    # What sits in the store is encrypted like any payload.
    stored = [path for path in (tmp_path / "payloads").rglob("*") if path.is_file()]
    assert len(stored) >= 2
    for path in stored:
        payload = Payload()
        payload.ParseFromString(path.read_bytes())
        assert payload.metadata["encoding"] == b"binary/encrypted"
        assert b"line 0000001" not in payload.data


async def test_without_a_store_the_result_is_cut_as_before(
    deployment: Deployment, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployed = deployment()
    async with deployed.worker(client, monkeypatch):
        result = await read_big(deployed, big_text(5 * 1024 * 1024), f"cut-{uuid.uuid4()}")
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output is not None
    assert result.output["truncated"]
    assert len(json.dumps(result.output)) < 1024 * 1024


async def test_replay_with_claims_needs_the_store(
    deployment: Deployment, client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    deployed = with_store(deployment, tmp_path, "local")
    workflow_id = f"replay-big-{uuid.uuid4()}"
    async with deployed.worker(client, monkeypatch):
        result = await read_big(deployed, big_text(3 * 1024 * 1024), workflow_id)
    assert result.status is CallStatus.COMPLETED, result.error
    exported = tmp_path / "history.json"
    exported.write_text(await plain_history(deployed.address, workflow_id))
    assert claims(exported.read_text())

    replayed = await deployed.run("replay", str(exported))
    assert replayed.code == 0, replayed.stderr
    assert replayed.stdout.startswith("ok ")

    (tmp_path / "payloads").rename(tmp_path / "elsewhere")
    lost = await deployed.run("replay", str(exported))
    assert lost.code == 1
    assert "stored payload default/" in lost.stdout
    assert "is missing: this process does not reach the deployment's store" in lost.stdout
    assert one_line(lost.stderr) == "toolcalls: replay: 1 of 1 histories did not replay"
    # Without the deployment's configuration there are no keys (and no store): said so.
    unconfigured = await toolcalls(tmp_path, "replay", str(exported))
    assert unconfigured.code == 1
    assert unconfigured.stdout.rstrip().endswith(
        ": payload encrypted with key 'k1', but this process has no keys: configure [codec] "
        "keys_env or keys_file"
    )


@pytest.fixture
def s3_server() -> Iterator[str]:
    """An S3-compatible server (moto) on a loopback port, with the bucket ``toolcalls-test``."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket="toolcalls-test")
        yield endpoint
    finally:
        server.stop()


AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


async def test_the_s3_driver_against_a_loopback_server(
    deployment: Deployment,
    client: Client,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    s3_server: str,
) -> None:
    import boto3

    s3 = (
        '[payloads.s3]\nbucket = "toolcalls-test"\nregion = "us-east-1"\n'
        f'endpoint_url = "{s3_server}"\n'
    )
    deployed = with_store(deployment, tmp_path, "s3", s3)
    for name, value in AWS.items():
        monkeypatch.setenv(name, value)
    text = big_text(2 * 1024 * 1024)
    workflow_id = f"s3-{uuid.uuid4()}"
    async with deployed.worker(client, monkeypatch):
        result = await read_big(deployed, text, workflow_id, AWS)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output is not None
    assert [section["text"] for section in result.output["sections"]] == [text]

    found = claims(await plain_history(deployed.address, workflow_id))
    assert found
    assert {claim["driverName"] for claim in found} == {"aws.s3driver"}
    bucket = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    keys = [item["Key"] for item in bucket.list_objects_v2(Bucket="toolcalls-test")["Contents"]]
    assert {claim["claimData"]["key"] for claim in found} <= set(keys)
    for key in keys:
        stored = Payload()
        stored.ParseFromString(bucket.get_object(Bucket="toolcalls-test", Key=key)["Body"].read())
        assert stored.metadata["encoding"] == b"binary/encrypted"

    # A reader with the same configuration reads the claims back through the server.
    shown = await deployed.run("show", workflow_id, "--json", env=AWS)
    assert shown.code == 0, shown.stderr[-2000:]
    output = json.loads(shown.stdout)["state"]["result"]["output"]
    assert output["sections"][0]["text"] == text


async def test_prune_deletes_only_old_payloads_of_the_store_layout(tmp_path: Path) -> None:
    root = tmp_path / "payloads"
    driver = LocalStorageDriver(root, max_payload_bytes=1024 * 1024)
    context = StorageDriverStoreContext(target=StorageDriverWorkflowInfo(namespace="default"))
    old, kept, again = [Payload(data=f"payload {n}".encode()) for n in range(3)]
    claims_ = await driver.store(context, [old, kept, again])
    paths = {name: root / c.claim_data["object"] for name, c in zip("okr", claims_, strict=True)}
    ten_days_ago = time.time() - 10 * 86_400
    for path in (paths["o"], paths["r"]):
        os.utime(path, (ten_days_ago, ten_days_ago))
    # Storing the same payload again (deduplicated) counts as using it now.
    await driver.store(context, [again])
    stray = root / "default" / "notes.txt"
    stray.write_text("not a stored payload")
    os.utime(stray, (ten_days_ago, ten_days_ago))
    config = write_config(
        tmp_path, f'[payloads]\nstore = "local"\n[payloads.local]\npath = "{root}"\n'
    )
    done = await toolcalls(
        tmp_path, "prune-payloads", "--older-than-days", "7", "--config", str(config)
    )
    assert done.code == 0, done.stderr
    assert done.stdout == "removed 1 stored payloads last stored over 7 days ago\n"
    assert [path.exists() for path in paths.values()] == [False, True, True]
    assert stray.exists()
    # What is left still reads back; the pruned one is named as missing.
    assert await driver.retrieve(StorageDriverRetrieveContext(), [claims_[1]]) == [kept]
    with pytest.raises(PayloadStoreError, match="is missing: this process does not reach"):
        await driver.retrieve(StorageDriverRetrieveContext(), [claims_[0]])


async def test_a_claim_names_only_an_intact_object_of_the_store(tmp_path: Path) -> None:
    root = tmp_path / "payloads"
    (tmp_path / "secret.txt").write_text("outside the store")
    driver = LocalStorageDriver(root, max_payload_bytes=64)
    context = StorageDriverStoreContext(target=StorageDriverWorkflowInfo(namespace="default"))
    (claim,) = await driver.store(context, [Payload(data=b"stored")])
    digest = claim.claim_data["sha256"]
    retrieve = StorageDriverRetrieveContext()
    for forged in (
        {"object": "../secret.txt", "sha256": digest},
        {"object": f"default/{digest[:2]}/{digest}", "sha256": "0" * 64},
        {"object": f"../{digest[:2]}/{digest}", "sha256": digest},
    ):
        with pytest.raises(PayloadStoreError, match="malformed claim"):
            await driver.retrieve(retrieve, [StorageDriverClaim(claim_data=forged)])
    (root / claim.claim_data["object"]).write_bytes(b"altered")
    with pytest.raises(PayloadStoreError, match="does not match its claim's digest"):
        await driver.retrieve(retrieve, [claim])
    with pytest.raises(PayloadStoreError, match="over the store's limit of 64 bytes"):
        await driver.store(context, [Payload(data=b"x" * 100)])


async def test_measuring_a_request_stores_nothing(tmp_path: Path) -> None:
    root = tmp_path / "payloads"
    config = parse_config(
        {"payloads": {"store": "local", "threshold_bytes": 1024, "local": {"path": str(root)}}}
    )
    converter = data_converter(config)
    request = ToolCallRequest(tool="write_file", arguments={"path": "/w/a", "content": "x" * 4096})
    await check_request(converter, request)
    assert not root.exists()
    # Sent for real, the same request is stored and history gets a claim.
    (payload,) = await converter.encode([request])
    assert payload.metadata["encoding"] == b"json/protobuf"
    assert len(list(root.rglob("*/*/*"))) == 1
