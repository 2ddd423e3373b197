"""The chat-completions transports: what an HTTP request and answer hold and mean (the
request body, the answer's text, the errors), the recorded transport that replays stored
answers. The HTTP transport itself is the worker's LLM loop's (``core.llm_calls``).
"""

from __future__ import annotations

import email.utils
import json
import re
from datetime import UTC, datetime
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from reviewapp.core.judging.prompt import JUDGEMENT_SCHEMA

RESPONSE_FORMATS = ("json_schema", "json_object", "text")

# How OpenAI-compatible servers word a refused response_format (OpenAI, vLLM,
# llama.cpp, Ollama): the field's name or the mode's.
_REFUSED_FORMAT = re.compile(rb"response_format|json_schema|json_object|structured output", re.I)


def error_text(exc: BaseException) -> str:
    """What went wrong, fit to show an API client: never the exception's repr, which for
    aiohttp's connection errors carries the proxy's credentials (its connection key)."""
    return f"{type(exc).__name__}: {exc}"


def shown_url(url: str) -> str:
    """The URL without any user:password in it, for messages a client reads."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class TransportError(Exception):
    """A chat call produced no usable text."""


class TransientTransportError(TransportError):
    """Worth retrying: connect errors, timeouts, 429, 5xx."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        # Seconds the server asked us to wait (Retry-After of a 429 or 503), if it said.
        self.retry_after = retry_after


class RateLimited(TransientTransportError):
    """HTTP 429: a busy provider, not a broken one.

    The call waits its turn and is sent again without spending a transport
    attempt; the lens's deadline is what bounds it.
    """


class PermanentTransportError(TransportError):
    """Retrying cannot help: 4xx other than 429, or a response we cannot read."""


class EndpointRefused(PermanentTransportError):
    """The endpoint's address may not be called with a lens's key (core/llm_endpoints.py)."""


class UnusableCompletion(PermanentTransportError):
    """The server answered, but with no judgement to read: a refusal, a cut-off answer."""


class ChatTransport(Protocol):
    def complete(self, messages: list[dict]) -> str: ...


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _request_body(
    *, model: str, messages: list[dict], temperature: float, response_format: str
) -> dict:
    """The chat-completions request body.

    ``response_format`` is the lens's mode: ``json_schema`` asks for the
    judgement's exact shape (strict structured output, where the endpoint has
    it), ``json_object`` for any JSON object, ``text`` for no constraint at
    all, for servers that refuse both. The answer is parsed the same way in
    every mode: the schema helps the model, it is never trusted in place of
    the parser.
    """
    body = {"model": model, "messages": messages, "temperature": temperature}
    if response_format not in RESPONSE_FORMATS:
        raise ValueError(f"unknown response format {response_format!r}")
    if response_format == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "judgement", "strict": True, "schema": JUDGEMENT_SCHEMA},
        }
    elif response_format == "json_object":
        body["response_format"] = {"type": "json_object"}
    return body


def _answer_of(status: int, retry_after: str | None, payload: bytes) -> str:
    """The answer text of a response, or the transport error its status means."""
    if status == 429:
        raise RateLimited("HTTP 429 rate limited", retry_after=_parse_retry_after(retry_after))
    if status >= 500:
        # A 503's Retry-After (a provider shedding load) is honoured like a 429's,
        # but the call spends an attempt, as for any 5xx.
        raise TransientTransportError(
            f"HTTP {status}: {payload[:200]!r}",
            retry_after=_parse_retry_after(retry_after) if status == 503 else None,
        )
    if status >= 400:
        if status in (400, 422) and _REFUSED_FORMAT.search(payload[:2000]):
            # Retrying the same request cannot help, and the admin can fix it.
            raise UnusableCompletion(
                f"the endpoint refused the requested response format (HTTP {status}: "
                f"{payload[:200]!r}); set the lens's response format to one it supports "
                "(json_object, or text)"
            )
        raise PermanentTransportError(f"HTTP {status}: {payload[:200]!r}")
    return _content_of(payload)


def _content_of(payload: bytes) -> str:
    """The answer text of a chat completion body, or why there is none.

    Read as real servers send it: a reasoning model's separate
    ``reasoning_content`` (vLLM, DeepSeek) is never the answer; a ``refusal``
    (content null) is the model declining, reported as such; an answer cut off
    at the token limit (``finish_reason: "length"``) is never accepted as is,
    even when a complete-looking object came before the cut.
    """
    try:
        choice = json.loads(payload)["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise PermanentTransportError(
            f"invalid chat completion response: {payload[:200]!r}"
        ) from exc
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip() and not (content or "").strip():
        raise UnusableCompletion(f"the model refused to judge: {refusal[:300]}")
    if choice.get("finish_reason") == "length":
        raise UnusableCompletion(
            "the model's answer was cut off at its token limit (finish_reason: length); "
            "raise the model's max tokens or shorten the lens instructions"
        )
    if content is None:
        if message.get("reasoning_content") or message.get("reasoning"):
            raise UnusableCompletion(
                "the model answered only in its reasoning (reasoning_content), with no content"
            )
        raise PermanentTransportError("chat completion content is null")
    if not isinstance(content, str):
        raise PermanentTransportError(f"chat completion content is {type(content).__name__}")
    return content


class RecordedTransport:
    """Replays stored responses in order, through the same loop as live calls.

    A string is returned as the model's text; ``{"error": "transient"|"permanent",
    "message": ...}`` raises that error; any other dict is a judgement stored as
    an object and is returned serialised.
    """

    _ERRORS = {"transient": TransientTransportError, "permanent": PermanentTransportError}

    def __init__(self, responses: list[str | dict]):
        for item in responses:
            if isinstance(item, dict) and "error" in item and item["error"] not in self._ERRORS:
                raise ValueError(f"unknown recorded error kind {item['error']!r}")
            if not isinstance(item, str | dict):
                raise ValueError(f"recorded response must be str or dict, not {type(item)}")
        self._responses = list(responses)
        self._position = 0
        # The messages of every call, so replays can be audited like live ones.
        self.requests: list[list[dict]] = []

    def complete(self, messages: list[dict]) -> str:
        self.requests.append([dict(m) for m in messages])
        if self._position >= len(self._responses):
            raise PermanentTransportError("recorded responses exhausted")
        item = self._responses[self._position]
        self._position += 1
        if isinstance(item, str):
            return item
        if "error" in item:
            raise self._ERRORS[item["error"]](str(item.get("message", "recorded error")))
        return json.dumps(item)
