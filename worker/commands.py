"""The call commands of ``toolcalls``: call, pending, show, reconcile, approve, deny, respond,
answer, tools, and prune-payloads.

They connect like the worker (``--config``, ``temporalio.envconfig``, ``--address``,
``--namespace``) and do what ``toolcalls.workflows.reach.client.ToolCallClient`` does, printing text
or, with ``--json``, JSON on stdout. A command returns its exit code; a failure raises
``CommandError`` carrying the code and a one-line reason for stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import shlex
import sys
from typing import Any

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.worker.arguments import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    build_request,
    decision_extras,
)
from toolcalls.worker.callbacks import check_notify
from toolcalls.worker.config import CONFIG_ENV, Config, build_catalog
from toolcalls.worker.connect import connect, resolve_target
from toolcalls.worker.decisions import MAX_DECISIONS, decisions, decisions_text
from toolcalls.worker.payloads.codec import PayloadKeyError
from toolcalls.worker.payloads.converter import data_converter
from toolcalls.worker.payloads.settings import Store
from toolcalls.worker.payloads.storage import PayloadStoreError, prune
from toolcalls.worker.progress_line import watched
from toolcalls.worker.render import (
    dumps,
    grants_table,
    pending_json,
    pending_table,
    reconciliation_text,
    result_reason,
    result_text,
    tools_text,
    view_json,
    view_text,
)
from toolcalls.worker.stop import stop_command
from toolcalls.worker.watch import watch
from toolcalls.workflows.models.approval import ApprovalRecord
from toolcalls.workflows.models.call import (
    CallStatus,
    ToolCallRequest,
    ToolCallResult,
)
from toolcalls.workflows.models.question import (
    AskUserOutput,
)
from toolcalls.workflows.models.reconcile import Settled
from toolcalls.workflows.reach.client import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    CallConflict,
    CallNotFound,
    Delivery,
    NoPendingRequest,
    NotReconcilable,
    Outcome,
    PageTokenError,
    PayloadTooLarge,
    PendingPage,
    Started,
    ToolCallClient,
)


async def connect_tools(config: Config, args: argparse.Namespace) -> ToolCallClient:
    """A ``ToolCallClient`` connected with the worker's settings; failures are exit 2."""
    target = resolve_target(config.temporal, address=args.address, namespace=args.namespace)
    where = f"{target.address} namespace {target.namespace}"
    converter = data_converter(config)
    try:
        client = await connect(target, converter)
    except (RuntimeError, ValueError) as exc:
        raise CommandError(EXIT_USAGE, f"cannot connect to {where}: {exc}") from None
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=target.namespace)
        )
    except RPCError as exc:
        # Anything but a missing namespace (a key that may not describe it, say) is for the
        # command itself to meet.
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise CommandError(EXIT_USAGE, f"cannot connect to {where}: {exc.message}") from None
    return ToolCallClient(client, task_queue=args.task_queue or config.task_queue)


async def run(config: Config, args: argparse.Namespace) -> int:
    """Run one of the commands that talk to Temporal."""
    # Arguments are checked before connecting: a typo is a usage error, whatever the server.
    request = build_request(args) if args.command == "call" else None
    if request is not None:
        check_tool(config, request.tool, args.config or os.environ.get(CONFIG_ENV))
        check_notify(config, request.notify, args.config or os.environ.get(CONFIG_ENV))
    calls = await connect_tools(config, args)
    subject = getattr(args, "workflow_id", None) or getattr(args, "grant_id", None)
    what = " ".join(filter(None, [args.command, subject]))
    try:
        if request is not None:
            return await _call(calls, args, request)
        if args.command == "pending":
            if not 1 <= args.limit <= MAX_PAGE_SIZE:
                raise CommandError(EXIT_USAGE, f"pending: --limit must be 1-{MAX_PAGE_SIZE}")
            try:
                page = await calls.pending_page(page_size=args.limit, page_token=args.page_token)
            except PageTokenError as exc:
                raise CommandError(EXIT_USAGE, f"pending: --page-token: {exc}") from None
            data = {
                "calls": [pending_json(call) for call in page.calls],
                "total": page.total,
                "next_page_token": page.next_page_token,
            }
            _emit(args, data, _pending_text(page, args))
            return EXIT_OK
        if args.command == "decisions":
            if not 1 <= args.limit <= MAX_DECISIONS:
                raise CommandError(EXIT_USAGE, f"decisions: --limit must be 1-{MAX_DECISIONS}")
            found = await decisions(calls.client, args.since, args.limit)
            _emit(args, {"decisions": found}, decisions_text(found))
            return EXIT_OK
        if args.command == "show":
            view = await calls.status(args.workflow_id)
            _emit(args, {"workflow_id": args.workflow_id, **view_json(view)}, view_text(view))
            return EXIT_OK
        if args.command == "watch":
            return await watch(calls, args)
        if args.command == "reconcile":
            answer = await calls.reconcile(args.workflow_id)
            _emit(args, answer.model_dump(mode="json"), reconciliation_text(answer))
            return EXIT_OK if answer.outcome is Settled.FOUND else EXIT_FAILED
        if args.command == "grants":
            return await _grants(calls, args)
        if args.command == "cancel":
            return await stop_command(calls, args)
        if args.command == "answer":
            text = None if args.decline else args.text
            outcome = await calls.answer(args.workflow_id, text, responder=args.by)
        elif args.command == "approve":
            extras = decision_extras(args)
            outcome = await calls.approve(
                args.workflow_id, approver=args.by, reason=args.reason, **extras
            )
        elif args.command == "respond":
            outcome = await calls.respond(
                args.workflow_id, args.text, responder=args.by, reason=args.reason
            )
        else:
            outcome = await calls.deny(args.workflow_id, approver=args.by, reason=args.reason)
        return _report(args, outcome)
    except (NoPendingRequest, CallNotFound, NotReconcilable) as exc:
        raise CommandError(EXIT_FAILED, f"{args.command}: {exc}") from None
    except PayloadTooLarge as exc:
        raise CommandError(EXIT_USAGE, f"{what}: {exc}") from None
    except (PayloadKeyError, PayloadStoreError) as exc:
        # The payloads are there but this process cannot read them: its keys or its store.
        raise CommandError(EXIT_USAGE, f"{what}: {exc}") from None
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise CommandError(EXIT_FAILED, f"{what}: {exc.message}") from None
        raise CommandError(EXIT_USAGE, f"{what}: {exc.message}") from None


def check_tool(config: Config, tool: str, source: str | None) -> None:
    """Refuse a tool the configuration ``source`` does not enable, before anything starts.

    Without a configuration file the command does not know the deployment's tools, and the
    workflow's plan is the one to refuse an unknown tool.
    """
    if source is None:
        return
    known = build_catalog(config).names
    if tool in known:
        return
    near = difflib.get_close_matches(tool, known, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    raise CommandError(
        EXIT_USAGE,
        f"call: no tool {tool!r} in {source}{hint} (its tools: {', '.join(known)})",
    )


def _pending_text(page: PendingPage, args: argparse.Namespace) -> str:
    if not page.calls and args.page_token:
        # The server gives a token for a page that turns out empty when the one before was
        # full: the listing ended there, which "no calls are waiting" would contradict.
        return f"no more calls; {page.total} waiting"
    return pending_table(page.calls) + _page_note(page, args)


def _page_note(page: PendingPage, args: argparse.Namespace) -> str:
    if page.next_page_token is None:
        return f"\n{page.total} waiting" if page.calls else ""
    # The next page is as long as this one, and asks the same server, only if the command says
    # so again.
    again = [
        f" --{flag.replace('_', '-')} {shlex.quote(str(value))}"
        for flag in ("config", "address", "namespace")
        if (value := getattr(args, flag, None)) is not None
    ]
    if args.limit != DEFAULT_PAGE_SIZE:
        again.append(f" --limit {args.limit}")
    return (
        f"\n{len(page.calls)} shown of {page.total} waiting; more: "
        f"toolcalls pending{''.join(again)} --page-token {page.next_page_token}"
    )


async def _grants(calls: ToolCallClient, args: argparse.Namespace) -> int:
    """``grants list`` and ``grants revoke``."""
    if args.grants_command == "revoke":
        await calls.revoke_grant(args.grant_id, by=args.by, reason=args.reason)
        _emit(args, {"grant_id": args.grant_id, "revoked": True}, f"revoked {args.grant_id}")
        return EXIT_OK
    grants = await calls.grants(tool=args.tool)
    _emit(args, [grant.model_dump(mode="json") for grant in grants], grants_table(grants))
    return EXIT_OK


def prune_payloads(config: Config, args: argparse.Namespace) -> int:
    """Delete the local store's payloads last stored more than ``--older-than-days`` ago."""
    section = config.payloads
    if section.store is not Store.LOCAL:
        raise CommandError(
            EXIT_USAGE,
            "prune-payloads: the configuration has no local store ([payloads] store = 'local'); "
            "an S3 store expires objects with a bucket lifecycle rule",
        )
    if args.older_than_days <= 0:
        raise CommandError(EXIT_USAGE, "prune-payloads: --older-than-days must be positive")
    root = section.local.path
    removed = prune(root, args.older_than_days * 86_400) if root.is_dir() else 0
    print(f"removed {removed} stored payloads last stored over {args.older_than_days:g} days ago")
    return EXIT_OK


def list_tools(config: Config, args: argparse.Namespace) -> int:
    """The deployment's enabled tools, from its configuration alone."""
    catalog = build_catalog(config)
    profile = args.profile
    if profile is not None and profile not in catalog.settings.profiles:
        known = ", ".join(catalog.settings.profiles) or "none"
        raise CommandError(EXIT_USAGE, f"tools: no profile {profile!r}; profiles: {known}")
    if args.format is not None:
        print(dumps(catalog.definitions(args.format, profile)))
    else:
        text = tools_text(catalog.specs_of(profile))
        if profile is not None:
            text = f"profile {profile} (snapshot {catalog.profile_digest(profile)})\n{text}"
        _emit(args, catalog.definitions(profile=profile), text)
    return EXIT_OK


async def _call(calls: ToolCallClient, args: argparse.Namespace, request: ToolCallRequest) -> int:
    try:
        started = await calls.start_or_join(request, workflow_id=args.id)
    except CallConflict as exc:
        raise CommandError(EXIT_FAILED, f"call: {exc}") from None
    handle = started.handle
    if started.existing:
        _note(started)
    if args.no_wait:
        # Waiting for the plan reports unknown tools and invalid arguments at once.
        view = await calls.planned(handle.id)
        ended = view.state.result
        if ended is None or ended.status is CallStatus.COMPLETED:
            data = {
                "workflow_id": handle.id,
                "run_id": handle.result_run_id,
                "existing": started.existing,
            }
            _emit(args, data, handle.id)
            return EXIT_OK
        return _finished(args, handle.id, ended)
    try:
        if sys.stderr.isatty() and started.running:
            result = await watched(calls, handle.id, request.tool, handle.result())
        else:
            result = await handle.result()
    except asyncio.CancelledError:
        raise CommandError(
            EXIT_FAILED,
            f"call {handle.id}: interrupted; the call goes on (toolcalls show {handle.id})",
        ) from None
    except WorkflowFailureError as exc:
        cause = exc.cause or exc
        raise CommandError(
            EXIT_FAILED, f"call {handle.id}: ended without a result: {cause}"
        ) from None
    return _finished(args, handle.id, result)


def _note(started: Started) -> None:
    """Say on stderr that the id named a call that already existed: nothing was started."""
    workflow_id = started.handle.id
    if started.running:
        text = f"call {workflow_id} already exists and is running: joined it, started nothing"
    else:
        text = f"call {workflow_id} already ran: its recorded result, nothing started again"
    print(f"toolcalls: {text}", file=sys.stderr, flush=True)


def _finished(args: argparse.Namespace, workflow_id: str, result: ToolCallResult) -> int:
    _emit(args, result.model_dump(mode="json"), result_text(result))
    if result.status is not CallStatus.COMPLETED:
        raise CommandError(EXIT_FAILED, f"call {workflow_id}: {result_reason(result)}")
    return EXIT_OK


_DONE = {"approve": "approved", "deny": "denied", "respond": "responded to", "answer": "answered"}
_SENT = {"approve": "approval", "deny": "denial", "respond": "response", "answer": "answer"}


def _report(args: argparse.Namespace, outcome: Outcome) -> int:
    """Print what became of a decision or answer; a rejected one fails the command."""
    command, workflow_id = args.command, args.workflow_id
    record = outcome.record
    if outcome.delivery is Delivery.QUEUED:
        text = (
            f"queued: no worker is serving {workflow_id}; the {_SENT[command]} is applied "
            "when one is"
        )
    elif outcome.delivery is Delivery.REJECTED:
        text = ""  # the reason goes to stderr, once
    elif isinstance(record, ApprovalRecord):
        who = record.approver or "an unnamed approver"
        text = f"{_DONE[command]} {workflow_id} (request {record.request_id}) by {who}"
    elif isinstance(record, AskUserOutput):
        verb = "declined" if record.answer is None else "answered"
        text = f"{verb} {workflow_id} (request {record.request_id})"
    else:
        text = f"{_DONE[command]} {workflow_id}"
    _emit(
        args,
        {
            "workflow_id": workflow_id,
            "action": command if not (command == "answer" and args.decline) else "decline",
            "delivery": outcome.delivery.value,
            "reason": outcome.reason,
            "record": record.model_dump(mode="json") if record is not None else None,
        },
        text,
    )
    if outcome.delivery is Delivery.REJECTED:
        raise CommandError(EXIT_FAILED, f"{command} {workflow_id}: rejected: {outcome.reason}")
    return EXIT_OK


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print(dumps(data))
    elif text:
        print(text)
