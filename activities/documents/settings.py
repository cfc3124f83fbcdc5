"""What a deployment decides about the document tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from toolcalls.activities.files.names import portable_root
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES, output_bytes

MAX_FILE_BYTES = 8_388_608
"""The spec's ``max_file_bytes``: larger files are refused before anything parses them."""
MAX_OUTPUT_CHARS = 20_000
"""The spec's ``max_output_chars``: text and cell characters of one extraction together."""
MAX_OUTPUT_CHARS_CEILING = 100_000
"""Escaping can cost up to eleven JSON bytes a character; ``read_document`` leaves out trailing
sections past 1,000,000 bytes (``tools.MAX_RESULT_BYTES``). A deployment that stores large
payloads outside history (``[payloads]``) may go up to its result limit in characters instead:
the sections that do not fit in bytes are still left out."""
MAX_SECTIONS = 100
MAX_SECTIONS_CEILING = 1_000
MAX_ARCHIVE_BYTES = 33_554_432
"""The spec's ``max_archive_bytes``: declared expanded size of a DOCX or XLSX, all entries."""
TIMEOUT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 50.0
"""The parser's time plus its start, kill and report must fit the activity's 60 s."""
MAX_MEMORY_BYTES = 536_870_912
"""Address space of the parser process (``RLIMIT_AS``); not in the spec, which leaves it open."""
MIN_MEMORY_BYTES = 134_217_728
"""Below this the interpreter and a parser library cannot even start."""
WARM_PARSERS = 1
"""Parser processes a worker keeps started, each waiting for one document."""
MAX_WARM_PARSERS = 8
"""Each waiting process holds an interpreter and the parser libraries (about 50 MB resident)."""


def output_chars_ceiling(result_bytes: int) -> int:
    """The most ``max_output_chars`` may be when a result may reach ``result_bytes``."""
    if result_bytes <= MAX_PAYLOAD_BYTES:
        return MAX_OUTPUT_CHARS_CEILING
    return max(MAX_OUTPUT_CHARS_CEILING, output_bytes(result_bytes))


class DocumentSettings(BaseModel):
    """``read_document`` and ``search_document``: roots, and the limits of one extraction."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roots: list[Annotated[Path, AfterValidator(portable_root)]] = Field(default_factory=list)
    """Absolute directories; every path must be inside one (the file tools' rules)."""
    max_file_bytes: int = Field(default=MAX_FILE_BYTES, gt=0)
    max_output_chars: int = Field(default=MAX_OUTPUT_CHARS, gt=0)
    """At most ``MAX_OUTPUT_CHARS_CEILING``, or the result limit with a payload store (checked
    with the deployment, ``output_chars_ceiling``)."""
    max_sections: int = Field(default=MAX_SECTIONS, gt=0, le=MAX_SECTIONS_CEILING)
    max_archive_bytes: int = Field(default=MAX_ARCHIVE_BYTES, gt=0)
    timeout_seconds: float = Field(default=TIMEOUT_SECONDS, gt=0, le=MAX_TIMEOUT_SECONDS)
    """Wall-clock time one parse may take before its process is killed."""
    max_memory_bytes: int = Field(default=MAX_MEMORY_BYTES, ge=MIN_MEMORY_BYTES)
    """Address-space ceiling of the parser process."""
    warm_parsers: int = Field(default=WARM_PARSERS, ge=0, le=MAX_WARM_PARSERS)
    """Parser processes kept started, each waiting for one document; 0 starts one per call."""
