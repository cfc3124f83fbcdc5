"""The deployment's attestation keys: from ``[attestation]``, or made once in the state directory.

A worker that is told no keys makes one at its first start and keeps it in
``<state_dir>/attestation.keys`` (mode 0600), so that its restarts, and every worker sharing the
state directory, vouch with the same key. Workers on several machines must share keys through
``[attestation] keys_env`` or ``keys_file`` instead: a tool worker with another key refuses every
call the workflow worker attested (docs/design.md, "Trust").
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from toolcalls.activities.attestations import KEY_BYTES, Attestor
from toolcalls.worker.config import Config, ConfigError
from toolcalls.worker.payloads.keys import KeysError, load_keys, new_key_line

STATE_KEYS = "attestation.keys"
"""The file in ``state_dir`` that holds a worker's own key when the configuration names none."""


def deployment_attestor(config: Config, environ: Mapping[str, str]) -> Attestor:
    """The deployment's keys as an ``Attestor``.

    Raises:
        ConfigError: the keys cannot be read or made, or are malformed (the message names the
            setting or the file).
    """
    if config.attestation.configured and config.inline.configured:
        raise ConfigError("set the keys in [attestation] only ([inline] is its former name)")
    section, name = (
        (config.inline, "inline")
        if config.inline.configured
        else (config.attestation, "attestation")
    )
    try:
        if section.configured:
            keyring = load_keys(
                keys_env=section.keys_env,
                keys_file=section.keys_file,
                environ=environ,
                section=name,
                use="an attestation key",
            )
        else:
            path = Path(config.state_dir) / STATE_KEYS
            _make_once(path)
            keyring = load_keys(
                keys_env=None,
                keys_file=path,
                environ=environ,
                section="state_dir",
                use="an attestation key",
            )
    except KeysError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"state_dir: cannot keep the attestation key: {exc}") from None
    return Attestor(keyring.keys)


def _make_once(path: Path) -> None:
    """Write a new key to ``path`` unless it exists; workers starting at once agree on one."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    key_id = f"local-{secrets.token_hex(4)}"
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(new_key_line(key_id, secrets.token_bytes(KEY_BYTES)) + "\n")
            out.flush()
            os.fsync(out.fileno())
        # A link is made whole or not at all, and never over an existing file: the first
        # worker's key wins and no one reads half a file.
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
