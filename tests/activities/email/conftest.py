"""The email tests' servers: one Dovecot for the session (an account per test), aiosmtpd per test.

Without Dovecot the IMAP tests fail, saying how to install it: ``make test`` installs it when it
is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from tests.activities.email.dovecot import DOVECOT_INSTALL, Account, Dovecot, dovecot_binary


@pytest.fixture(scope="session")
def mail_ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="session")
def dovecot(mail_ca: trustme.CA) -> Iterator[Dovecot]:
    if dovecot_binary() is None:
        pytest.fail(f"dovecot is not installed: {DOVECOT_INSTALL} (make test does this)")
    server = Dovecot(mail_ca)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def account(dovecot: Dovecot) -> Account:
    """A fresh account with INBOX and Drafts."""
    return dovecot.add_account("Drafts")


@pytest.fixture
def ca_file(tmp_path: Path, mail_ca: trustme.CA) -> Path:
    path = tmp_path / "mail-ca.pem"
    mail_ca.cert_pem.write_to_path(str(path))
    return path
