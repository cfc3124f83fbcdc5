"""Credentials, read from the worker's environment or a file each time an operation needs them.

Never copied into a setting, an argument, a preview, a result or a message: a missing or unusable
secret is reported by the key that names where it should be, never by its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from toolcalls.activities.email.backend import MailConfiguration

MAX_SECRET_BYTES = 16_384


def read_secret(
    *,
    environ: Mapping[str, str],
    env_key: str,
    env_name: str | None,
    file_key: str,
    file: Path | None,
) -> str:
    """The secret in the variable ``env_name`` or in ``file`` (its first line), read now."""
    if env_name is not None:
        value = environ.get(env_name, "")
        where = f"{env_key}: environment variable {env_name}"
    elif file is not None:
        where = f"{file_key}: {file}"
        try:
            with file.open("rb") as handle:
                data = handle.read(MAX_SECRET_BYTES + 1)
        except OSError as exc:
            raise MailConfiguration(f"{where} cannot be read ({exc.strerror or 'error'})") from None
        if len(data) > MAX_SECRET_BYTES:
            raise MailConfiguration(f"{where} is larger than {MAX_SECRET_BYTES} bytes")
        try:
            value = data.decode("utf-8").strip("\r\n").partition("\n")[0].rstrip("\r")
        except UnicodeDecodeError:
            raise MailConfiguration(f"{where} is not UTF-8 text") from None
    else:
        raise MailConfiguration(f"{env_key}: set {env_key} or {file_key}")
    if not value:
        raise MailConfiguration(f"{where} is empty or not set on the worker")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise MailConfiguration(f"{where} holds a control character")
    return value
