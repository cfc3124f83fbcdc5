"""``toolcalls pending`` page by page: ``--limit`` and ``--page-token`` as real subprocesses
against the session's dev server and a real worker, in a namespace of their own (so that paging
through every waiting call pages through these tests' calls only)."""

from __future__ import annotations

import base64
import json
import re
import shlex
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.conftest import LISTING_NAMESPACE
from tests.support.harness import make_config, pending_approval, running_worker, start_call
from tests.worker.support import Done, command, pending_entry
from toolcalls.workflows.reach.pending import PAGE_TOKEN_TAG

REFUSED = "toolcalls: pending: --page-token: not a token a previous page gave, or cut short\n"


NAMESPACE = ("--namespace", LISTING_NAMESPACE)


async def test_the_printed_command_and_the_json_token_each_page_through_every_waiting_call(
    tmp_path: Path, listing_client: Client, address: str, task_queue: str
) -> None:
    client = listing_client
    async with running_worker(client, make_config(task_queue)):
        handles = [
            await start_call(client, task_queue, "probe_write", {"token": f"page-{n}"})
            for n in range(3)
        ]
        for handle in handles:
            await pending_approval(handle)
            await pending_entry(tmp_path, address, handle.id, 20, *NAMESPACE)
        mine = {handle.id for handle in handles}

        # --json: each page's next_page_token, passed back with --page-token.
        seen: list[str] = []
        totals: set[int] = set()
        args = ["pending", "--limit", "1", "--json", *NAMESPACE]
        while True:
            done = await command(tmp_path, address, *args)
            assert (done.code, done.stderr) == (0, ""), done
            page = json.loads(done.stdout)
            assert len(page["calls"]) <= 1
            seen += [call["workflow_id"] for call in page["calls"]]
            totals.add(page["total"])
            if page["next_page_token"] is None:
                break
            token = page["next_page_token"]
            args = ["pending", "--limit", "1", "--json", "--page-token", token, *NAMESPACE]
        assert mine <= set(seen)
        assert len(seen) == len(set(seen)) >= 3
        assert len(totals) == 1  # counted once, carried by the tokens

        # Text: the last line is the command for the next page, which keeps the page's size.
        # A full page always gets a token, so with pages of one the listing ends with an empty
        # page, which says the listing is over rather than that nothing waits.
        rows: list[str] = []
        totals = set()
        argv = ["pending", "--limit", "1", *NAMESPACE]
        while True:
            done = await command(tmp_path, address, *argv)
            assert done.code == 0, done.stderr
            *table, last = done.stdout.splitlines()
            if "more: " not in last:
                assert table == []
                assert last == f"no more calls; {totals.pop()} waiting"
                break
            rows += [line.split()[0] for line in table[1:]]
            shown = re.fullmatch(r"1 shown of (\d+) waiting; more: (.*)", last)
            assert shown is not None, last
            totals.add(int(shown.group(1)))
            printed = shlex.split(shown.group(2))
            # The same server and namespace, and the same page size, as the command given.
            assert printed[:8] == [
                "toolcalls",
                "pending",
                "--address",
                address,
                *NAMESPACE,
                "--limit",
                "1",
            ]
            argv = printed[1:]
        assert not totals  # one total, carried from the first page to the last
        assert [row for row in rows if row in mine] == [call for call in seen if call in mine]
        assert len(rows) == len(set(rows))
        for handle in handles:
            await handle.terminate("test over")


@pytest.mark.parametrize(
    "token",
    [
        "abc",  # not base64
        "not a token!",
        base64.urlsafe_b64encode(b"abcd").decode(),  # base64, but not one a page gave
        base64.urlsafe_b64encode(PAGE_TOKEN_TAG + b"x:00000000:{}").decode(),
        base64.urlsafe_b64encode(PAGE_TOKEN_TAG + b"5:00000000:{}").decode(),  # bad checksum
    ],
)
async def test_a_token_no_page_gave_is_a_usage_error_before_the_server_sees_it(
    tmp_path: Path, address: str, token: str
) -> None:
    done = await command(tmp_path, address, "pending", "--page-token", token)
    # The server would answer such a token with an internal error that the client retries
    # for seconds, logging each retry: the refusal is one line on stderr and nothing else.
    assert done == Done(2, "", REFUSED)


async def test_a_cut_short_token_is_refused(
    tmp_path: Path, listing_client: Client, address: str, task_queue: str
) -> None:
    client = listing_client
    async with running_worker(client, make_config(task_queue)):
        handles = [
            await start_call(client, task_queue, "probe_write", {"token": f"cut-{n}"})
            for n in range(2)
        ]
        for handle in handles:
            await pending_approval(handle)
            await pending_entry(tmp_path, address, handle.id, 20, *NAMESPACE)
        first = await command(tmp_path, address, "pending", "--limit", "1", "--json", *NAMESPACE)
        token = json.loads(first.stdout)["next_page_token"]
        assert token is not None
        # Cut at a multiple of four, the copy is still valid base64.
        cut = token[: (len(token) - 8) // 4 * 4]
        refused = await command(tmp_path, address, "pending", "--page-token", cut, *NAMESPACE)
        assert refused == Done(2, "", REFUSED)
        whole = await command(
            tmp_path, address, "pending", "--page-token", token, "--json", *NAMESPACE
        )
        assert whole.code == 0, whole.stderr
        for handle in handles:
            await handle.terminate("test over")


async def test_a_limit_out_of_range_names_the_flag(tmp_path: Path, address: str) -> None:
    for limit in ("0", "1001"):
        done = await command(tmp_path, address, "pending", "--limit", limit)
        assert done == Done(2, "", "toolcalls: pending: --limit must be 1-1000\n")
