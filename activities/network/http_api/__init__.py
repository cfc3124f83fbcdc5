"""HTTP API tools configured by the deployment: one tool per ``[[http]]`` table.

What it can touch: the one base URL its table names, and nothing else. The model chooses a path
below the base, a method among the allowed ones, query parameters and a JSON body; it never
chooses the origin, the base path, headers, limits or credentials. How it is confined:

- the path is checked (``toolcalls.activities.network.http_paths``) and appended to the base URL as
text,
  so traversal, absolute and scheme-relative URLs and their encoded forms never reach a request;
- requests go through the network guard, pinned to the addresses it resolved and checked, with
  any address and port admitted (the destination is the deployment's choice, internal services
  included), environment proxies ignored, no redirect followed and no retry of a write;
- header values come from the configuration or, for secrets, from the worker's environment when
  the call runs: never from the arguments, never into a preview, a result or the history;
- bodies are bounded both ways: the JSON request body by ``max_request_bytes`` (at plan time),
  the decoded response body by ``max_response_bytes`` while it streams, the result by the payload
  cap.

A table's tool has a dynamic name, so ``HttpTools.family_for(settings)`` makes a subclass whose
methods ``<name>`` and ``prepare_<name>`` are the tool, as the catalog and the runtime expect of
every family; the worker builds one instance of it per configured tool.
"""

from toolcalls.activities.network.http_api.models import (
    HttpRequestArgs,
    HttpResponseResult,
    arguments_model,
    encode_body,
    http_capabilities,
)
from toolcalls.activities.network.http_api.tools import USER_AGENT, HttpTools, http_tool_spec

__all__ = [
    "USER_AGENT",
    "HttpRequestArgs",
    "HttpResponseResult",
    "HttpTools",
    "arguments_model",
    "encode_body",
    "http_capabilities",
    "http_tool_spec",
]
