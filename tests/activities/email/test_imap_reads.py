"""Reading a real Dovecot mailbox over implicit TLS: pages, MIME shapes, flags, stale ids."""

from __future__ import annotations

from pathlib import Path

from tests.activities.email import messages
from tests.activities.email.dovecot import Account, Dovecot, quoted
from tests.activities.email.support import (
    PASSWORD_ENV,
    call,
    code_of,
    details,
    dump,
    failure,
    imap_settings,
    tools_for,
)
from toolcalls.activities.email.mime import MAX_BODY_CHARS
from toolcalls.activities.email.tools import EmailTools
from toolcalls.workflows.models.call import ErrorCode


def tools(dovecot: Dovecot, account: Account, ca_file: Path, **changes: object) -> EmailTools:
    settings = imap_settings(dovecot, account, ca_file, **changes)
    return tools_for(settings, {PASSWORD_ENV: account.password})


async def test_pages_descend_by_uid_and_leave_out_later_arrivals(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    uids = [dovecot.append(account, messages.simple(f"message {n}")) for n in range(5)]
    mail = tools(dovecot, account, ca_file)
    first = await call(mail, "list_email_messages", {"max_results": 2})
    assert [item["subject"] for item in first.items] == ["message 4", "message 3"]
    assert first.items[0]["from"] == "someone@example.com"
    assert first.next_page_token is not None

    dovecot.append(account, messages.simple("arrived later"))
    second = await call(
        mail, "list_email_messages", {"max_results": 2, "page_token": first.next_page_token}
    )
    third = await call(
        mail, "list_email_messages", {"max_results": 2, "page_token": second.next_page_token}
    )
    assert [item["subject"] for item in second.items] == ["message 2", "message 1"]
    assert [item["subject"] for item in third.items] == ["message 0"]
    assert third.next_page_token is None
    listed = [item["id"] for item in (*first.items, *second.items, *third.items)]
    assert [int(i.rsplit(".", 1)[1]) for i in listed] == sorted(uids, reverse=True)

    fresh = await call(mail, "list_email_messages", {"max_results": 2})
    assert fresh.items[0]["subject"] == "arrived later"


async def test_a_token_continues_only_the_same_query_and_page_size(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    for n in range(3):
        dovecot.append(account, messages.simple(f"message {n}"))
    mail = tools(dovecot, account, ca_file)
    first = await call(mail, "list_email_messages", {"max_results": 1})
    error = await failure(
        mail, "list_email_messages", {"max_results": 2, "page_token": first.next_page_token}
    )
    assert code_of(error) is ErrorCode.INVALID_ARGUMENTS
    assert details(error)["fixable_args"] == ["page_token"]
    assert "same" in error.message or "another query" in error.message


async def test_the_query_is_literal_text_never_imap_syntax(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    dovecot.append(account, messages.simple('odd "quoted" (subject) \\ here'))
    dovecot.append(account, messages.simple("plain one", body="ALL OR FROM x"))
    dovecot.append(account, messages.simple("unrelated"))
    mail = tools(dovecot, account, ca_file)

    quoted_hit = await call(mail, "list_email_messages", {"query": '"quoted" (subject) \\'})
    assert [item["subject"] for item in quoted_hit.items] == ['odd "quoted" (subject) \\ here']
    # Search keys in the query are text to find, not keys: only the body containing them matches.
    syntax = await call(mail, "list_email_messages", {"query": "ALL OR FROM x"})
    assert [item["subject"] for item in syntax.items] == ["plain one"]
    nothing = await call(mail, "list_email_messages", {"query": ") UID 1:* ("})
    assert nothing.items == []

    error = await failure(mail, "list_email_messages", {"query": "café"})
    assert code_of(error) is ErrorCode.INVALID_ARGUMENTS
    assert details(error)["fixable_args"] == ["query"]


async def test_reads_decode_nested_parts_and_charsets_and_never_return_attachments(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    for raw in (
        messages.PLAIN,
        messages.ALTERNATIVE_IN_MIXED,
        messages.HTML_ONLY,
        messages.ODD_CHARSETS,
    ):
        dovecot.append(account, raw)
    mail = tools(dovecot, account, ca_file)
    listed = await call(mail, "list_email_messages", {})
    ids = [item["id"] for item in reversed(listed.items)]
    plain, nested, html, odd = [
        dump(await call(mail, "read_email", {"message_id": i})) for i in ids
    ]

    assert plain["headers"] == {
        "from": "Alice <alice@example.com>",
        "to": "bob@example.org",
        "cc": "carol@example.net",
        "date": "Mon, 30 Nov 2026 09:00:00 +0000",
        "subject": "Quarterly numbers",
        "message_id": "<plain-1@example.com>",
    }
    assert plain["body"] == "The numbers are in.\nSee you Monday."
    assert plain["snippet"] == "The numbers are in. See you Monday."
    assert (plain["has_attachments"], plain["html_body_omitted"]) == (False, False)

    assert nested["headers"]["from"] == "Jörg <joerg@example.de>"
    assert nested["headers"]["subject"] == "Grüße"
    assert nested["body"] == "Schöne Grüße aus München"
    assert nested["has_attachments"] is True
    assert nested["html_body_omitted"] is False  # its plain alternative was returned
    assert messages.ATTACHMENT_TEXT not in str(nested)
    assert "U0VDUkVU" not in str(nested)

    assert html["body"] == ""
    assert html["html_body_omitted"] is True
    assert "HTML-ONLY-BODY" not in str(html)

    assert odd["headers"]["subject"] == "Привет"
    parts = odd["body"].split("\n\n")
    assert parts[0] == "Привет"
    assert parts[1] == "caf\ufffd unknown"
    assert parts[2] == "wrong \ufffd\ufffd declared"
    assert parts[3] == "not a text codec"  # the named text part is a file, not body text
    assert "NAMED-FILE-CONTENT" not in odd["body"]
    assert odd["has_attachments"] is True


async def test_a_long_body_is_cut_at_20000_characters(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    dovecot.append(account, messages.sized(40_000))
    mail = tools(dovecot, account, ca_file)
    listed = await call(mail, "list_email_messages", {})
    read = await call(mail, "read_email", {"message_id": listed.items[0]["id"]})
    assert read.body_truncated is True
    assert len(read.body) == MAX_BODY_CHARS


async def test_listing_and_reading_leave_every_flag_as_it_was(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    unseen = dovecot.append(account, messages.PLAIN)
    seen = dovecot.append(account, messages.ALTERNATIVE_IN_MIXED, flags="\\Seen \\Flagged")
    dovecot.append(account, messages.HTML_ONLY)
    before = dovecot.flags(account)
    assert before[unseen] == set()
    assert before[seen] == {"\\Seen", "\\Flagged"}
    mail = tools(dovecot, account, ca_file)
    listed = await call(mail, "list_email_messages", {})
    for item in listed.items:
        await call(mail, "read_email", {"message_id": item["id"]})
    await call(mail, "list_email_messages", {"query": "numbers"})
    assert dovecot.flags(account) == before


async def test_a_recreated_mailbox_refuses_the_ids_and_tokens_of_its_predecessor(
    dovecot: Dovecot, ca_file: Path
) -> None:
    account = dovecot.add_account("Work")
    dovecot.append(account, messages.simple("first life 1"), mailbox="Work")
    dovecot.append(account, messages.simple("first life 2"), mailbox="Work")
    mail = tools(dovecot, account, ca_file, mailbox="Work")
    old = await call(mail, "list_email_messages", {"max_results": 1})
    old_id = old.items[0]["id"]

    with dovecot.session(account) as imap:
        assert imap.delete(quoted("Work"))[0] == "OK"
        assert imap.create(quoted("Work"))[0] == "OK"
    dovecot.append(account, messages.simple("second life 1"), mailbox="Work")
    dovecot.append(account, messages.simple("second life 2"), mailbox="Work")  # the same UIDs

    error = await failure(mail, "read_email", {"message_id": old_id})
    assert code_of(error) is ErrorCode.INVALID_ARGUMENTS
    assert details(error)["fixable_args"] == ["message_id"]
    assert "recreated" in error.message
    error = await failure(
        mail, "list_email_messages", {"max_results": 1, "page_token": old.next_page_token}
    )
    assert code_of(error) is ErrorCode.INVALID_ARGUMENTS
    assert "recreated" in error.message

    fresh = await call(mail, "list_email_messages", {"max_results": 1})
    assert fresh.items[0]["subject"] == "second life 2"


async def test_an_id_of_another_folder_or_a_foreign_one_is_refused(
    dovecot: Dovecot, ca_file: Path
) -> None:
    account = dovecot.add_account("Work")
    dovecot.append(account, messages.simple("in inbox"))
    dovecot.append(account, messages.simple("at work"), mailbox="Work")
    inbox = tools(dovecot, account, ca_file)
    work = tools(dovecot, account, ca_file, mailbox="Work")
    inbox_id = (await call(inbox, "list_email_messages", {})).items[0]["id"]
    error = await failure(work, "read_email", {"message_id": inbox_id})
    assert code_of(error) is ErrorCode.INVALID_ARGUMENTS
    assert "another account or folder" in error.message
    for forged in ("1", "<plain-1@example.com>", "imap.zz.1.1"):
        error = await failure(work, "read_email", {"message_id": forged})
        assert code_of(error) is ErrorCode.INVALID_ARGUMENTS, forged
    missing = inbox_id.rsplit(".", 1)[0] + ".999"
    error = await failure(inbox, "read_email", {"message_id": missing})
    assert code_of(error) is ErrorCode.INVALID_ARGUMENTS
    assert "no such message" in error.message


async def test_a_message_over_max_message_bytes_is_refused_by_its_size(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    dovecot.append(account, messages.sized(40_000))
    mail = tools(dovecot, account, ca_file, max_message_bytes=16_384)
    listed = await call(mail, "list_email_messages", {})
    assert listed.items[0]["subject"] == "Big"
    error = await failure(mail, "read_email", {"message_id": listed.items[0]["id"]})
    assert code_of(error) is ErrorCode.OUTPUT_TOO_LARGE
    assert "the limit is 16384" in error.message
