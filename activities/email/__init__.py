"""Email over one mailbox the deployment configures: list, read, draft and send.

``family`` declares the tools and ``[email]``; ``tools`` holds ``EmailTools``, which validates
nothing the plan has not (``models``, ``compose``) and maps the backend's errors; ``backend`` the
``EmailBackend`` protocol another mailbox can implement and the errors a backend reports; ``imap``
and ``smtp`` the standard-protocol backend; ``mime`` what a read returns from a MIME message.
"""

from toolcalls.activities.email.backend import EmailBackend
from toolcalls.activities.email.compose import message_id_for
from toolcalls.activities.email.family import EMAIL, EMAIL_TOOLS
from toolcalls.activities.email.imap import IMAPEmail
from toolcalls.activities.email.tools import EmailTools

__all__ = [
    "EMAIL",
    "EMAIL_TOOLS",
    "EmailBackend",
    "EmailTools",
    "IMAPEmail",
    "message_id_for",
]
