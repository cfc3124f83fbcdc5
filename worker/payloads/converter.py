"""The deployment's data converter: pydantic payloads, the ``[codec]``, the ``[payloads]`` store.

Every process that reads or writes a deployment's payloads must use the same converter: its
workers, the ``toolcalls`` commands, ``toolcalls replay``, an application's ``ToolCallClient`` and
the worker of a parent workflow that starts calls as children. ``data_converter(config)`` builds
it in one call; ``ToolCallsPlugin(config)`` applies it to the clients, workers and replayers it is
given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from temporalio.converter import (
    DataConverter,
    DefaultFailureConverter,
    DefaultFailureConverterWithEncodedAttributes,
    ExternalStorage,
    PayloadCodec,
    StorageDriver,
)

from toolcalls.activities.family import Extra
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES
from toolcalls.worker.config import Config, ConfigError, load_config
from toolcalls.worker.payloads.codec import EncryptionCodec, KeylessCodec
from toolcalls.worker.payloads.keys import KeysError, load_keys
from toolcalls.worker.payloads.settings import PayloadsSection, Store
from toolcalls.worker.payloads.storage import LocalStorageDriver, SessionS3Client
from toolcalls.workflows.reach.client import pydantic_converter

CODEC_EXTRA = Extra("codec", ("cryptography",))
S3_EXTRA = Extra("s3", ("aioboto3", "types_aiobotocore_s3"))
STORE_HEADROOM_BYTES = MAX_PAYLOAD_BYTES
"""What a stored payload may hold beyond a tool's largest result: the call's envelope around it
(the ``ToolCallResult``'s events and fields), and the codec's."""


def _require(extra: Extra, key: str, what: str) -> None:
    missing = extra.missing()
    if missing:
        raise ConfigError(
            f"{key}: {what} needs the {extra.name} extra (missing {', '.join(missing)}): "
            f"{extra.hint}"
        )


@dataclass(frozen=True)
class PayloadPipeline:
    """What the configuration puts between a value and Temporal: codec and store."""

    codec: PayloadCodec | None
    """The ``[codec]`` encryption, or ``None`` when no keys are configured."""
    storage: ExternalStorage | None
    """The ``[payloads]`` store, or ``None``."""

    def converter(self, existing: DataConverter | None = None) -> DataConverter:
        """``existing`` (default the pydantic converter) with this pipeline.

        A configured codec or store replaces the one ``existing`` has; with none configured,
        ``existing``'s stay, and a converter with no codec at all gets ``KeylessCodec``, so an
        encrypted payload met without keys is refused with its key id.
        """
        converter = pydantic_converter(existing)
        codec = converter.payload_codec
        failures = converter.failure_converter_class
        if self.codec is not None:
            codec = self.codec
            # Failure messages and stack traces (paths, command lines) go into the encoded
            # attributes, encrypted with the rest.
            if failures is DefaultFailureConverter:
                failures = DefaultFailureConverterWithEncodedAttributes
        elif codec is None:
            codec = KeylessCodec()
        storage = self.storage or converter.external_storage
        if (codec, failures, storage) == (
            converter.payload_codec,
            converter.failure_converter_class,
            converter.external_storage,
        ):
            return converter
        return dataclasses.replace(
            converter,
            payload_codec=codec,
            failure_converter_class=failures,
            external_storage=storage,
        )


def payload_pipeline(config: Config, environ: Mapping[str, str] | None = None) -> PayloadPipeline:
    """The codec and store ``config`` asks for, with the keys read from ``environ`` or a file.

    Raises:
        ConfigError: naming the key: missing or malformed keys, a missing extra.
    """
    import os

    environ = os.environ if environ is None else environ
    return PayloadPipeline(codec=_codec(config, environ), storage=_storage(config.payloads))


def _codec(config: Config, environ: Mapping[str, str]) -> PayloadCodec | None:
    section = config.codec
    if not section.enabled:
        return None
    _require(CODEC_EXTRA, "codec", "encryption")
    try:
        keyring = load_keys(keys_env=section.keys_env, keys_file=section.keys_file, environ=environ)
    except KeysError as exc:
        raise ConfigError(str(exc)) from None
    return EncryptionCodec(keyring, compress=section.compress)


def store_driver(section: PayloadsSection) -> StorageDriver | None:
    """The driver of the configured store, or ``None``."""
    limit = section.result_bytes + STORE_HEADROOM_BYTES
    if section.store is Store.LOCAL:
        return LocalStorageDriver(section.local.path, max_payload_bytes=limit)
    if section.store is Store.S3:
        _require(S3_EXTRA, "payloads.s3", "the S3 store")
        from temporalio.contrib.aws.s3driver import S3StorageDriver

        s3 = section.s3
        assert s3 is not None  # the section's validator
        return S3StorageDriver(
            SessionS3Client(region=s3.region, endpoint_url=s3.endpoint_url),
            bucket=s3.bucket,
            driver_name=s3.driver_name,
            max_payload_size=limit,
        )
    return None


def _storage(section: PayloadsSection) -> ExternalStorage | None:
    driver = store_driver(section)
    if driver is None:
        return None
    return ExternalStorage(drivers=[driver], payload_size_threshold=section.threshold_bytes)


def data_converter(
    config: Config | str | None = None, *, environ: Mapping[str, str] | None = None
) -> DataConverter:
    """The data converter for ``config`` (a ``Config``, a file's path, or ``$TOOLCALLS_CONFIG``).

    Give it to every client and worker that touches the deployment's calls; a parent workflow's
    worker included: ``Client.connect(..., data_converter=data_converter("toolcalls.toml"))``.

    Raises:
        ConfigError: the configuration is invalid or its keys cannot be read.
    """
    if not isinstance(config, Config):
        config = load_config(config, environ)
    return payload_pipeline(config, environ).converter()
