"""A real Dovecot IMAP server on loopback, implicit TLS only, with a config of its own.

Everything it owns (configuration, certificates, state, mail) lives in one temporary directory.
Run as root, its login processes run as Debian's ``dovenull`` and the mail as ``dovecot``; run
as another user, everything runs as that user. Each test gets accounts of its own.
"""

from __future__ import annotations

import contextlib
import grp
import imaplib
import os
import pwd
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import trustme

from tests.worker.support import free_port, port_open

DOVECOT_INSTALL = "apt-get update && apt-get install -y dovecot-imapd"
SPARE_ACCOUNTS = 100


def dovecot_binary() -> str | None:
    return shutil.which("dovecot") or (
        "/usr/sbin/dovecot" if os.access("/usr/sbin/dovecot", os.X_OK) else None
    )


@dataclass(frozen=True)
class Account:
    username: str
    password: str


class Dovecot:
    """A running server: ``port``, the CA its certificate chains to, and its accounts."""

    def __init__(self, ca: trustme.CA) -> None:
        binary = dovecot_binary()
        if binary is None:
            raise RuntimeError(f"dovecot is not installed ({DOVECOT_INSTALL})")
        self.root = Path(tempfile.mkdtemp(prefix="toolcalls-dovecot-"))
        self.root.chmod(0o755)  # its unprivileged processes must reach their files
        self.port = free_port()
        self.ca_file = self.root / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ca_file))
        cert = ca.issue_cert("127.0.0.1")
        cert.private_key_pem.write_to_path(str(self.root / "key.pem"))
        cert.cert_chain_pems[0].write_to_path(str(self.root / "cert.pem"))
        self._users = self.root / "users"
        # Dovecot re-reads the user file at most once a second: accounts are made up front.
        self._spare = [_new_account() for _ in range(SPARE_ACCOUNTS)]
        self._users.write_text("".join(map(_line, self._spare)), encoding="ascii")
        home = self.root / "home"
        home.mkdir()
        if os.geteuid() == 0:
            internal, login, mail = "dovecot", "dovenull", pwd.getpwnam("dovecot")
            os.chown(home, mail.pw_uid, mail.pw_gid)
        else:
            # Not root: every service runs as this user (no privilege changes are possible).
            mail = pwd.getpwuid(os.getuid())
            internal = login = mail.pw_name
        group = grp.getgrgid(mail.pw_gid).gr_name
        config = self.root / "dovecot.conf"
        config.write_text(
            textwrap.dedent(
                f"""
                base_dir = {self.root}/run
                state_dir = {self.root}/state
                instance_name = toolcalls-{uuid.uuid4().hex[:8]}
                log_path = {self.root}/dovecot.log
                protocols = imap
                listen = 127.0.0.1
                default_internal_user = {internal}
                default_internal_group = {group}
                default_login_user = {login}
                first_valid_uid = 1
                ssl = required
                ssl_cert = <{self.root}/cert.pem
                ssl_key = <{self.root}/key.pem
                auth_mechanisms = plain login
                auth_failure_delay = 0
                passdb {{
                  driver = passwd-file
                  args = scheme=PLAIN {self._users}
                }}
                userdb {{
                  driver = static
                  args = uid={mail.pw_uid} gid={mail.pw_gid} home={home}/%u
                }}
                mail_location = maildir:~/Maildir
                service imap-login {{
                  chroot =
                  inet_listener imap {{
                    port = 0
                  }}
                  inet_listener imaps {{
                    port = {self.port}
                    ssl = yes
                  }}
                }}
                service anvil {{
                  chroot =
                  unix_listener anvil-auth-penalty {{
                    mode = 0
                  }}
                }}
                """
            ),
            encoding="ascii",
        )
        self.config = config
        self._process = subprocess.Popen(
            [binary, "-F", "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while not port_open(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"dovecot did not start: {self.log()}")
            time.sleep(0.05)

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        if self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
        if self._process.stderr is not None:
            self._process.stderr.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def add_account(self, *folders: str) -> Account:
        """A new account with ``INBOX`` and ``folders``."""
        if self._spare:
            account = self._spare.pop()
        else:
            account = _new_account()
            with self._users.open("a", encoding="ascii") as handle:
                handle.write(_line(account))
            time.sleep(1.5)
        with self.session(account) as imap:
            for folder in folders:
                status, _ = imap.create(quoted(folder))
                assert status == "OK", folder
        return account

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    @contextlib.contextmanager
    def session(self, account: Account) -> Iterator[imaplib.IMAP4_SSL]:
        """A second, independent IMAP session (the test's own view of the mailbox)."""
        imap = imaplib.IMAP4_SSL("127.0.0.1", self.port, ssl_context=self.context(), timeout=10)
        try:
            imap.login(account.username, account.password)
            yield imap
        finally:
            with contextlib.suppress(OSError, imaplib.IMAP4.error):
                imap.logout()

    def append(self, account: Account, raw: bytes, mailbox: str = "INBOX", flags: str = "") -> int:
        """Put ``raw`` into ``mailbox`` with APPEND; its UID."""
        with self.session(account) as imap:
            status, data = imap.append(quoted(mailbox), f"({flags})" if flags else None, None, raw)
            assert status == "OK", data
        match = re.search(rb"APPENDUID \d+ (\d+)", data[0] or b"")
        assert match, data
        return int(match.group(1))

    def flags(self, account: Account, mailbox: str = "INBOX") -> dict[int, set[str]]:
        """Every message's flags, read from a session of its own (read-only)."""
        with self.session(account) as imap:
            imap.select(quoted(mailbox), readonly=True)
            status, data = imap.uid("FETCH", "1:*", "(UID FLAGS)")
            assert status == "OK"
        found: dict[int, set[str]] = {}
        for entry in data:
            if not isinstance(entry, bytes):
                continue
            uid = re.search(rb"UID (\d+)", entry)
            flags = re.search(rb"FLAGS \(([^)]*)\)", entry)
            if uid and flags:
                found[int(uid.group(1))] = set(flags.group(1).decode().split()) - {"\\Recent"}
        return found

    def messages(self, account: Account, mailbox: str) -> list[tuple[set[str], bytes]]:
        """Every message in ``mailbox``: its flags and its bytes."""
        with self.session(account) as imap:
            imap.select(quoted(mailbox), readonly=True)
            _status, data = imap.uid("FETCH", "1:*", "(FLAGS BODY.PEEK[])")
        found = []
        for entry in data:
            if isinstance(entry, tuple):
                flags = re.search(rb"FLAGS \(([^)]*)\)", entry[0])
                found.append((set(flags.group(1).decode().split()) if flags else set(), entry[1]))
        return found


def _new_account() -> Account:
    return Account(f"u{uuid.uuid4().hex[:10]}@example.org", f"pw-{uuid.uuid4().hex}")


def _line(account: Account) -> str:
    return f"{account.username}:{{PLAIN}}{account.password}\n"


def quoted(mailbox: str) -> str:
    return '"' + mailbox.replace("\\", "\\\\").replace('"', '\\"') + '"'
