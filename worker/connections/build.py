"""``[connections]`` made real: the store's keys, the SQLite file and the ``Connections``.

The store's keys come from ``key_env`` or ``key_file`` (``id=base64key`` lines, newest first,
as ``[codec]`` keys), or, with neither, from a key made once in
``<state_dir>/connections.keys`` (mode 0600): every process sharing the state directory (the
worker, the inbox, the CLI) then reads the same. Hosts that share no state directory share the
key through ``key_env`` or ``key_file``, and the store through one path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from toolcalls.activities.connections import Connections, ConnectionStore, Sealer
from toolcalls.activities.connections.settings import KEY_FILE, STORE_FILE
from toolcalls.worker.attestation import _make_once
from toolcalls.worker.config import Config, ConfigError
from toolcalls.worker.payloads.keys import KeysError, load_keys


def deployment_connections(config: Config, environ: Mapping[str, str]) -> Connections | None:
    """The deployment's ``Connections``; ``None`` when it configures no provider.

    Raises:
        ConfigError: the keys or the store cannot be read or made (naming the setting).
    """
    settings = config.connections
    if not settings.providers:
        return None
    state = Path(config.state_dir)
    try:
        if settings.key_env is not None or settings.key_file is not None:
            keyring = load_keys(
                keys_env=settings.key_env,
                keys_file=settings.key_file,
                environ=environ,
                section="connections",
                use="the connection store",
            )
        else:
            path = state / KEY_FILE
            _make_once(path)
            keyring = load_keys(
                keys_env=None,
                keys_file=path,
                environ=environ,
                section="state_dir",
                use="the connection store",
            )
        store = ConnectionStore(settings.store or state / STORE_FILE, keyring.keys)
    except KeysError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"connections.store: {exc}") from None
    return Connections(settings, store, Sealer(keyring.keys), environ)
