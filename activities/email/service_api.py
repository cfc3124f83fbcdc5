"""What the Gmail and Graph backends share: the one guarded service client, and its failures.

Every request goes through ``toolcalls.activities.network.service.ServiceClient``: no redirects, a 2
MiB response cap, no automatic retries, the token read from the worker's environment or file for
each request, and remote error bodies never copied. A failure leaves as ``MailServiceFailure``,
which the tools turn into the tool error the service client's ``service_failure`` gives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolcalls.activities.connections import Connections
from toolcalls.activities.connections.settings import BACKEND_PROVIDERS
from toolcalls.activities.email.backend import (
    MailConfiguration,
    MailNotFound,
    MailRejected,
    MailServiceFailure,
)
from toolcalls.activities.email.connect import tls_context
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.network.failures import NetworkError
from toolcalls.activities.network.guard import NetworkGuard
from toolcalls.activities.network.service import (
    Credentials,
    Secret,
    ServiceClient,
    ServiceError,
    ServiceResponse,
    ServiceStatusError,
    bearer_token,
    service_guard,
)


def service_client(
    service: str,
    settings: EmailSettings,
    environ: Mapping[str, str],
    guard: NetworkGuard | None,
    connections: Connections | None = None,
) -> ServiceClient:
    """A client authenticated by the token ``email.token_env`` or ``email.token_file`` names, or
    by the call's principal's own (``email.connection``)."""
    credentials: Credentials
    if settings.connection is not None:
        if connections is None:
            raise MailConfiguration("email.connection needs [connections] with its provider")
        credentials = connections.bearer(settings.connection, "email")
    elif settings.token_env is not None:
        secret = Secret(env=settings.token_env)
    elif settings.token_file is not None:
        secret = Secret(file=settings.token_file)
    else:
        raise MailConfiguration(
            f"email.token_env: the {service} backend needs token_env or token_file"
        )
    if settings.connection is None:
        credentials = bearer_token(secret, environ)
    verify: Any = tls_context(settings.ca_file) if settings.ca_file is not None else True
    return ServiceClient(
        service,
        credentials=credentials,
        timeout_seconds=settings.timeout_seconds,
        guard=guard or service_guard(verify=verify),
    )


async def request(
    client: ServiceClient,
    method: str,
    url: str,
    *,
    argument: str | None = None,
    **options: Any,
) -> ServiceResponse:
    """One request; a failure as ``MailServiceFailure``. ``argument`` names the argument a 400
    (or, for a read of one message, a 404) is the model's to fix."""
    try:
        return await client.request(method, url, **options)
    except ServiceStatusError as exc:
        if argument is not None and exc.status_code == 400:
            raise MailRejected(
                f"{argument}: {client.service} refused it (http 400); check it", argument
            ) from None
        if argument == "message_id" and exc.status_code == 404:
            raise MailNotFound(
                "message_id: no such message (deleted or moved?)", argument
            ) from None
        raise MailServiceFailure(client.service, exc) from None
    except (ServiceError, NetworkError) as exc:
        raise MailServiceFailure(client.service, exc) from None


def json_object(client: ServiceClient, response: ServiceResponse) -> dict[str, Any]:
    try:
        return response.json_object()
    except ServiceError as exc:
        raise MailServiceFailure(client.service, exc) from None


def credential_problem(settings: EmailSettings) -> str | None:
    """What the token settings lack, for the configuration check."""
    if settings.connection is not None:
        if settings.token_env is not None or settings.token_file is not None:
            return "email.connection: set connection or token_env/token_file, not both"
        wanted = BACKEND_PROVIDERS[settings.backend]
        if settings.connection != wanted:
            return f"email.connection: the {settings.backend} backend connects through {wanted}"
        return None
    if settings.token_env is None and settings.token_file is None:
        return f"email.token_env: the {settings.backend} backend needs token_env or token_file"
    return None


def field(value: Any) -> dict[str, Any]:
    """``value`` if the service answered an object there, else an empty one."""
    return value if isinstance(value, dict) else {}


def objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list the service answered (anything else in it is skipped)."""
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []
