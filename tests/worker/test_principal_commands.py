"""The command line's principal (``call --as``) and the decision log (``decisions``), against a
real worker with a real Cedar policy."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.support.harness import make_config, running_worker
from tests.worker.support import command, one_line, toolcalls

POLICY = """@id("everyone")
permit(principal, action, resource);

@id("no-bob-writes")
forbid(principal == Principal::"bob", action == Action::"filesystem.write", resource);
"""


async def test_call_as_a_principal_and_list_the_decisions(
    client: Client, task_queue: str, address: str, tmp_path: Path
) -> None:
    policy = tmp_path / "main.cedar"
    policy.write_text(POLICY)
    config = make_config(
        task_queue,
        ceiling={"default_effect": "allow"},
        policies=[{"name": "main", "files": [str(policy)]}],
    )
    bobs, alices = f"bob-{uuid.uuid4()}", f"alice-{uuid.uuid4()}"
    queue = ("--task-queue", task_queue)
    async with running_worker(client, config):
        denied = await command(
            tmp_path, address, "call", "probe_write", '{"token": "b"}', "--as", "bob",
            "--id", bobs, *queue, "--json",
        )  # fmt: skip
        done = await command(
            tmp_path, address, "call", "probe_write", '{"token": "a"}',
            "--as", "alice", "--as-attr", "tenant=acme", "--id", alices, *queue, "--json",
        )  # fmt: skip
    assert json.loads(denied.stdout)["status"] == "denied", denied.stderr
    assert "no-bob-writes" in json.loads(denied.stdout)["error"]["message"]
    result = json.loads(done.stdout)
    assert result["status"] == "completed", done.stderr
    assert result["principal"] == "alice"

    shown = await command(tmp_path, address, "show", alices)
    assert re.search(r"^acts for:\s+alice$", shown.stdout, re.M), shown.stdout

    listed = await command(tmp_path, address, "decisions", "--since", "10m", "--limit", "50")
    assert listed.code == 0, listed.stderr
    lines = {line.split()[1]: line for line in listed.stdout.splitlines()}
    assert " bob  probe_write  deny " in lines[bobs]
    assert "no-bob-writes" in lines[bobs]
    assert " alice  probe_write  allow " in lines[alices]
    as_json = await command(tmp_path, address, "decisions", "--json", "--limit", "50")
    entries = {e["workflow_id"]: e for e in json.loads(as_json.stdout)["decisions"]}
    assert entries[bobs]["effect"] == "deny"
    assert entries[bobs]["principal"] == "bob"
    assert entries[alices]["policies"][0]["policies"] == ["everyone"]
    assert "token" not in as_json.stdout  # never argument values


async def test_a_malformed_principal_is_a_usage_error(address: str, tmp_path: Path) -> None:
    done = await command(tmp_path, address, "call", "calculator", "--as-attr", "tenant=acme")
    assert done.code == 2
    assert one_line(done.stderr) == "toolcalls: call: --as-attr needs --as"
    done = await command(
        tmp_path, address, "call", "calculator", "--as", "alice", "--as-attr", "Tenant=acme"
    )
    assert done.code == 2
    assert "--as: invalid principal: attributes" in one_line(done.stderr)


async def test_a_worker_with_a_policy_that_does_not_parse_stops_before_connecting(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.cedar").write_text(
        "permit(principal, action, resource);\n\n"
        'permit(principal, action, resource)\n  when { resource.path lik "/a" };\n'
    )
    config = tmp_path / "toolcalls.toml"
    config.write_text(
        'tools = ["calculator"]\n[[policies]]\nname = "main"\n'
        f'files = ["{tmp_path / "bad.cedar"}"]\n'
    )
    done = await toolcalls(tmp_path, "worker", "--config", str(config), "--address", "127.0.0.1:1")
    assert done.code == 2
    assert one_line(done.stderr) == (
        f"toolcalls: policies main: {tmp_path / 'bad.cedar'}:4:24: unexpected token `lik`"
    )
