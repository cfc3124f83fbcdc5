"""Settings, calls and messages the email tests share."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.activities.email.dovecot import Account, Dovecot
from toolcalls.activities.base import CallContext
from toolcalls.activities.email.family import EMAIL_TOOLS, make_backend
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.email.tools import EmailTools
from toolcalls.workflows.models.call import ErrorCode

PASSWORD_ENV = "TEST_MAIL_PASSWORD"
CALL = CallContext("wf-email", "call-1", "wf-email:call-1", None, None)
_ARGS = {spec.name: spec.arguments for spec in EMAIL_TOOLS}


def imap_settings(
    dovecot: Dovecot, account: Account, trust: Path, **changes: object
) -> EmailSettings:
    """The account on the test server, trusting the CA in ``trust``; ``changes`` override."""
    values: dict[str, object] = {
        "backend": "imap",
        "username": account.username,
        "password_env": PASSWORD_ENV,
        "imap_host": "127.0.0.1",
        "imap_port": dovecot.port,
        "drafts_mailbox": "Drafts",
        "ca_file": trust,
        "timeout_seconds": 20,
    }
    values.update(changes)
    return EmailSettings.model_validate(values)


def tools_for(settings: EmailSettings, environ: Mapping[str, str]) -> EmailTools:
    """The tools a worker builds for ``settings``, reading secrets from ``environ``."""
    return EmailTools(settings, make_backend(settings, environ))


async def call(
    tools: EmailTools,
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    context: CallContext = CALL,
    env: ActivityEnvironment | None = None,
) -> Any:
    """Run one tool method in a real activity context, its arguments validated as at plan."""
    args = _ARGS[tool].model_validate(dict(arguments or {}))
    method = getattr(tools, tool)
    return await (env or ActivityEnvironment()).run(method, args, context)


async def failure(
    tools: EmailTools,
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    context: CallContext = CALL,
) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await call(tools, tool, arguments, context)
    return caught.value


def code_of(error: ApplicationError) -> ErrorCode:
    return ErrorCode(error.type or "")


def details(error: ApplicationError) -> dict[str, Any]:
    found = error.details[0] if error.details else {}
    assert isinstance(found, dict)
    return found


def dump(result: BaseModel) -> dict[str, Any]:
    return result.model_dump(mode="json")
