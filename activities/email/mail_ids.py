"""IMAP message ids and page tokens: each names its account, folder and UIDVALIDITY.

A server may renumber a folder (a recreated mailbox gets a new UIDVALIDITY), and the same UID then
names another message. So an id or token carries the folder's identity and UIDVALIDITY, and one
from another folder, account or an earlier UIDVALIDITY is refused instead of being read.

    id      imap.<account>.<uidvalidity>.<uid>
    token   imap.<account>.<uidvalidity>.<before-uid>.<query>

``account`` is a digest of the login, server and folder; ``query`` one of the query and page size
the token continues (a token continues the same listing only).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from toolcalls.activities.email.backend import MailRejected

ACCOUNT_HEX = 16
QUERY_HEX = 12
_ID = re.compile(r"imap\.([0-9a-f]{16})\.([0-9]{1,10})\.([0-9]{1,10})")
_TOKEN = re.compile(r"imap\.([0-9a-f]{16})\.([0-9]{1,10})\.([0-9]{1,10})\.([0-9a-f]{12})")


def account_tag(username: str, host: str, port: int, mailbox: str) -> str:
    key = "\x00".join((username, host.lower(), str(port), mailbox))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:ACCOUNT_HEX]


def query_tag(query: str, max_results: int) -> str:
    return hashlib.sha256(f"{query}\x00{max_results}".encode()).hexdigest()[:QUERY_HEX]


@dataclass(frozen=True)
class Folder:
    """The folder as the tools address it: account tag and name, and its UIDVALIDITY now."""

    account: str
    name: str
    uidvalidity: int

    def message_id(self, uid: int) -> str:
        return f"imap.{self.account}.{self.uidvalidity}.{uid}"

    def page_token(self, before: int, query: str, max_results: int) -> str:
        return f"imap.{self.account}.{self.uidvalidity}.{before}.{query_tag(query, max_results)}"

    def uid_of(self, message_id: str) -> int:
        """The UID a ``read_email`` id names in this folder, or ``MailRejected``."""
        match = _ID.fullmatch(message_id)
        if match is None:
            raise MailRejected(
                "message_id: not an imap message id; use an id from list_email_messages",
                "message_id",
            )
        account, uidvalidity, uid = match.groups()
        self._check(account, int(uidvalidity), "message_id")
        return int(uid)

    def before_of(self, token: str, query: str, max_results: int) -> int:
        """The UID a page token continues below, or ``MailRejected``."""
        match = _TOKEN.fullmatch(token)
        if match is None:
            raise MailRejected(
                "page_token: not a page token of this backend; list again without it",
                "page_token",
            )
        account, uidvalidity, before, tag = match.groups()
        self._check(account, int(uidvalidity), "page_token")
        if tag != query_tag(query, max_results):
            raise MailRejected(
                "page_token: it continues a listing with another query or max_results; keep "
                "both unchanged, or list again without page_token",
                "page_token",
            )
        return int(before)

    def _check(self, account: str, uidvalidity: int, argument: str) -> None:
        if account != self.account:
            raise MailRejected(
                f"{argument}: it belongs to another account or folder than {self.name}; use one "
                "from list_email_messages of this mailbox",
                argument,
            )
        if uidvalidity != self.uidvalidity:
            raise MailRejected(
                f"{argument}: {self.name} was recreated since it was listed (its UIDVALIDITY "
                "changed), so it could name another message; list again",
                argument,
            )
