"""Raw messages of every shape a mailbox holds, put in with APPEND, and a subject that must
never be sent."""

from __future__ import annotations

ENCODED_WORD_SUBJECT = (
    "=?utf-8?q?Quarterly_report=0D=0AReply-To:_attacker@evil.example=0D=0ABcc:_victim@evil.example"
    "=0D=0AContent-Type:_text/html?="
)
"""Decoded by Python's email generator while it writes Subject (the CVE-2024-6923 class): three
header fields of its own that a preview of the subject does not show."""

PLAIN = (
    b"From: Alice <alice@example.com>\r\n"
    b"To: bob@example.org\r\n"
    b"Cc: carol@example.net\r\n"
    b"Date: Mon, 30 Nov 2026 09:00:00 +0000\r\n"
    b"Subject: Quarterly numbers\r\n"
    b"Message-ID: <plain-1@example.com>\r\n"
    b"\r\n"
    b"The numbers are in.\r\nSee you Monday.\r\n"
)

ALTERNATIVE_IN_MIXED = (
    b"From: =?utf-8?q?J=C3=B6rg?= <joerg@example.de>\r\n"
    b"To: bob@example.org\r\n"
    b"Subject: =?iso-8859-1?q?Gr=FC=DFe?=\r\n"
    b"Message-ID: <nested-1@example.de>\r\n"
    b"MIME-Version: 1.0\r\n"
    b'Content-Type: multipart/mixed; boundary="outer"\r\n'
    b"\r\n"
    b"--outer\r\n"
    b'Content-Type: multipart/alternative; boundary="alt"\r\n'
    b"\r\n"
    b"--alt\r\n"
    b"Content-Type: text/plain; charset=iso-8859-1\r\n"
    b"Content-Transfer-Encoding: quoted-printable\r\n"
    b"\r\n"
    b"Sch=F6ne Gr=FC=DFe aus M=FCnchen\r\n"
    b"--alt\r\n"
    b'Content-Type: multipart/related; boundary="rel"\r\n'
    b"\r\n"
    b"--rel\r\n"
    b"Content-Type: text/html; charset=utf-8\r\n"
    b"\r\n"
    b"<p>Sch\xc3\xb6ne Gr\xc3\xbc\xc3\x9fe <img src=cid:logo></p>\r\n"
    b"--rel\r\n"
    b"Content-Type: image/png\r\n"
    b"Content-ID: <logo>\r\n"
    b"Content-Transfer-Encoding: base64\r\n"
    b"\r\n"
    b"iVBORw0KGgo=\r\n"
    b"--rel--\r\n"
    b"--alt--\r\n"
    b"--outer\r\n"
    b'Content-Type: application/pdf; name="report.pdf"\r\n'
    b'Content-Disposition: attachment; filename="report.pdf"\r\n'
    b"Content-Transfer-Encoding: base64\r\n"
    b"\r\n"
    b"U0VDUkVULUFUVEFDSE1FTlQtQ09OVEVOVA==\r\n"
    b"--outer--\r\n"
)
"""The attachment decodes to SECRET-ATTACHMENT-CONTENT, which no read may return."""
ATTACHMENT_TEXT = "SECRET-ATTACHMENT-CONTENT"

HTML_ONLY = (
    b"From: news@example.com\r\n"
    b"Subject: Newsletter\r\n"
    b"MIME-Version: 1.0\r\n"
    b"Content-Type: text/html; charset=utf-8\r\n"
    b"\r\n"
    b"<html><body><h1>HTML-ONLY-BODY</h1></body></html>\r\n"
)

ODD_CHARSETS = (
    b"From: ivan@example.ru\r\n"
    b"Subject: =?koi8-r?b?8NLJ18XU?=\r\n"
    b"MIME-Version: 1.0\r\n"
    b'Content-Type: multipart/mixed; boundary="b"\r\n'
    b"\r\n"
    b"--b\r\n"
    b"Content-Type: text/plain; charset=koi8-r\r\n"
    b"\r\n"
    b"\xf0\xd2\xc9\xd7\xc5\xd4\r\n"
    b"--b\r\n"
    b"Content-Type: text/plain; charset=x-no-such-charset\r\n"
    b"\r\n"
    b"caf\xe9 unknown\r\n"
    b"--b\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"\r\n"
    b"wrong \xff\xfe declared\r\n"
    b"--b\r\n"
    b'Content-Type: text/plain; charset=utf-8; name="notes.txt"\r\n'
    b"\r\n"
    b"NAMED-FILE-CONTENT\r\n"
    b"--b\r\n"
    b"Content-Type: text/plain; charset=base64\r\n"
    b"\r\n"
    b"not a text codec\r\n"
    b"--b--\r\n"
)
"""koi8-r "Привет"; an unknown charset; bytes that are not the declared UTF-8; a codec that is
not a text encoding. Each degrades, none fails the read."""


def sized(size: int, subject: str = "Big") -> bytes:
    """A plain message of about ``size`` bytes."""
    head = f"From: big@example.com\r\nSubject: {subject}\r\n\r\n".encode()
    line = b"x" * 76 + b"\r\n"
    return head + line * max(1, (size - len(head)) // len(line))


def simple(subject: str, body: str = "hello", message_id: str | None = None) -> bytes:
    extra = f"Message-ID: {message_id}\r\n" if message_id else ""
    return (
        f"From: someone@example.com\r\nTo: me@example.org\r\nSubject: {subject}\r\n{extra}\r\n"
        f"{body}\r\n"
    ).encode()
