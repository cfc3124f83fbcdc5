"""The agent-framework adapters' tests. The OpenAI Agents SDK exports traces to OpenAI unless told
not to; the tests have no key to send them with, so tracing is off."""

from __future__ import annotations

import os

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
