"""The pydantic payload converter every toolcalls payload needs, added to a client's own
converter without losing its codec or failure converter."""

from __future__ import annotations

import dataclasses

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

from toolcalls.workflows.reach.keyless import KeylessCodec


def pydantic_converter(existing: DataConverter | None = None) -> DataConverter:
    """``existing`` with the pydantic payload converter every toolcalls payload needs.

    Only the payload converter changes: a codec (encryption, say) and a failure converter the
    application chose must stay, or payloads would go out unencoded.
    """
    if existing is None:
        return pydantic_data_converter
    if existing.payload_converter_class is pydantic_data_converter.payload_converter_class:
        return existing
    return dataclasses.replace(
        existing, payload_converter_class=pydantic_data_converter.payload_converter_class
    )


def with_pydantic_converter(client: Client) -> Client:
    """``client``, or a client on the same connection with ``pydantic_converter`` and, when it
    has no codec, ``KeylessCodec`` (an encrypted payload is then a typed ``PayloadKeyError``)."""
    converter = pydantic_converter(client.data_converter)
    if converter.payload_codec is None:
        converter = dataclasses.replace(converter, payload_codec=KeylessCodec())
    if converter is client.data_converter:
        return client
    config = client.config()
    config["data_converter"] = converter
    return Client(**config)
