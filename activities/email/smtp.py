"""SMTP submission with ``aiosmtplib``: TLS before anything else, then one mail transaction.

Implicit TLS (465 by default) or STARTTLS (``smtp_starttls``, 587 by default), which must succeed
before the login: a server that does not offer it, or answers it with anything but 220, gets no
credentials and no message. There is no plaintext fallback. The transaction is attempted once;
once the message may have left (from ``MAIL FROM`` on), a failure is uncertain, never retried.

Acceptance means the server accepted those recipients; it is not delivery. The results carry the
accepted addresses and each refused one with its reply code, never the server's text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from toolcalls.activities.email.backend import (
    MailBackendError,
    MailConfiguration,
    MailRefused,
    MailTimeout,
    MailUncertain,
    write_point,
)
from toolcalls.activities.email.connect import connection_failures, socket_timeout, tls_context
from toolcalls.activities.email.settings import EmailSettings


async def submit(
    settings: EmailSettings,
    password: str,
    message: bytes,
    message_id: str,
    sender: str,
    recipients: Sequence[str],
) -> dict[str, Any]:
    """Send the serialized ``message`` once to ``recipients``; the SMTP send result.

    The bytes are sent as given (``sendmail``, not ``send_message``, which would serialize the
    message again with its own policy): they are the ones checked against the approval preview.
    """
    import aiosmtplib  # the integrations extra; its absence is a configuration problem

    host = settings.smtp_host
    if host is None or settings.username is None:
        raise MailConfiguration("email.smtp_host: send_email needs smtp_host and username")
    port = settings.smtp_port_or_default
    where = f"{host}:{port}"
    context = tls_context(settings.ca_file)
    starttls = settings.smtp_starttls
    client = aiosmtplib.SMTP(
        hostname=host,
        port=port,
        use_tls=not starttls,
        start_tls=False,  # never opportunistic: below, STARTTLS is required or nothing is sent
        tls_context=context,
        timeout=socket_timeout(settings.timeout_seconds),
    )
    try:
        with connection_failures("email.smtp_host", host, port), _before_sending(where):
            await client.connect()
            if starttls:
                await client.ehlo()
                if not client.supports_extension("starttls"):
                    raise MailConfiguration(
                        f"email.smtp_starttls: {where} does not offer STARTTLS; nothing was sent "
                        "and no password either (there is no plaintext fallback)"
                    )
                try:
                    await client.starttls()
                except aiosmtplib.SMTPResponseException as exc:
                    raise MailConfiguration(
                        f"email.smtp_starttls: {where} answered STARTTLS with {exc.code}; nothing "
                        "was sent and no password either"
                    ) from None
            await client.ehlo()
            if not client.supports_extension("auth"):
                raise MailConfiguration(
                    f"email.smtp_host: {where} offers no login (AUTH); nothing was sent"
                )
            try:
                await client.login(settings.username, password)
            except (aiosmtplib.SMTPAuthenticationError, aiosmtplib.SMTPNotSupported):
                raise MailConfiguration(
                    "email.username: the smtp server refused the login (check the username and "
                    "the password; some providers need an app password)"
                ) from None
        write_point()
        try:
            refused, _ = await client.sendmail(sender, list(recipients), message)
        except aiosmtplib.SMTPRecipientsRefused as exc:
            result = _result(message_id, recipients, {r.recipient: r.code for r in exc.recipients})
            raise MailRefused(
                f"the smtp server refused every recipient ({_codes(result)}); nothing was sent",
                result,
            ) from None
        except aiosmtplib.SMTPSenderRefused as exc:
            raise MailConfiguration(
                f"email.sender: the smtp server refused {sender} as the sender ({exc.code}); "
                "nothing was sent"
            ) from None
        except aiosmtplib.SMTPDataError as exc:
            raise MailBackendError(
                f"the smtp server refused the message ({exc.code}); nothing was accepted"
            ) from None
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise MailUncertain(
                f"the connection to {where} failed during the transaction "
                f"({_kind(exc)}); the server may have accepted the message"
            ) from None
        return _result(message_id, recipients, {address: r.code for address, r in refused.items()})
    finally:
        if client.is_connected:
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError):
                client.close()


@contextmanager
def _before_sending(where: str) -> Iterator[None]:
    """Failures before the transaction, when nothing was sent: connection failures pass on to
    ``connection_failures``; an unexpected reply is the server's."""
    import aiosmtplib

    try:
        yield
    except aiosmtplib.SMTPConnectError:
        raise  # not connected: ``connection_failures`` words it
    except aiosmtplib.SMTPTimeoutError:
        raise MailTimeout(f"{where} did not answer in time; nothing was sent") from None
    except (MailBackendError, OSError):
        raise
    except aiosmtplib.SMTPException as exc:
        raise MailBackendError(
            f"{where} answered unexpectedly before the message was sent ({_kind(exc)}); "
            "nothing was sent"
        ) from None


def _result(message_id: str, recipients: Sequence[str], refused: dict[str, int]) -> dict[str, Any]:
    accepted = [address for address in recipients if address not in refused]
    status = "accepted" if not refused else "partially_accepted" if accepted else "rejected"
    return {
        "status": status,
        "message_id": message_id,
        "accepted": accepted,
        "refused": [{"address": address, "code": code} for address, code in refused.items()],
    }


def _codes(result: dict[str, Any]) -> str:
    return ", ".join(f"{r['address']}: {r['code']}" for r in result["refused"])


def _kind(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    return f"reply {code}" if isinstance(code, int) else type(exc).__name__
