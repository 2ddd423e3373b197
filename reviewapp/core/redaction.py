"""What a lens failure may say to the agent that submitted: no key, no account detail.

A provider's error body is the most useful part of a failure's message, and the
riskiest: it can echo the API key (in full or in part), the organisation or
project the key belongs to, an account's e-mail address, or a URL with its
credentials. `redacted` replaces whatever looks like one of those with
"[redacted]", and `capped` keeps a message to a length an agent can show.
"""

from __future__ import annotations

import re

MESSAGE_LIMIT = 300
MASK = "[redacted]"

_PATTERNS = (
    # user:password@ in a URL
    (re.compile(r"(?<=://)[^/\s@]+@"), ""),
    # Authorization header values
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=*-]{6,}"), r"\1 " + MASK),
    # Provider key formats (with the masked middles providers echo: sk-abc***xyz)
    (
        re.compile(
            r"\b(?:sk|rk|pk)-[A-Za-z0-9_*.-]{6,}"  # OpenAI, Anthropic (sk-ant-…), Stripe-likes
            r"|\brva_[A-Za-z0-9_-]{6,}"  # reviewapp's own tokens
            r"|\bAKIA[0-9A-Z]{12,}"  # AWS access key ids
            r"|\bAIza[0-9A-Za-z_-]{20,}"  # Google API keys
            r"|\bgh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
            r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
            r"|\b(?:hf|gsk|xai|pplx|nvapi)[_-][A-Za-z0-9_-]{16,}"  # Hugging Face, Groq, …
        ),
        MASK,
    ),
    # Account details: organisations and projects, e-mail addresses
    # (an id has a digit: "user_message" is a word, "org-9fKq2LmZ" an organisation)
    (re.compile(r"\b(?:org|proj|project|acct|user)[-_](?=[A-Za-z]*\d)[A-Za-z0-9]{6,}\b"), MASK),
    (re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"), MASK),
    # key = value, "key": "value"
    (
        re.compile(
            r"(?i)\b((?:api[_-]?key|access[_-]?key|secret|token|password|passwd|credential"
            r"|authorization|organi[sz]ation|account(?:[_-]?id)?|project(?:[_-]?id)?)"
            r"""["']?\s*[:=]\s*["']?)[^\s"',;}]{4,}"""
        ),
        r"\1" + MASK,
    ),
    # Anything else long and random-looking: 32+ characters of a key's alphabet, mixed
    (
        re.compile(r"\b(?=[A-Za-z0-9_+/=-]*\d)(?=[A-Za-z0-9_+/=-]*[A-Za-z])[A-Za-z0-9_+/=-]{32,}"),
        MASK,
    ),
)


def redacted(text: str) -> str:
    """`text` with everything that looks like a key or an account detail replaced."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def capped(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` cut to `limit` characters, saying so."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
