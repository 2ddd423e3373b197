"""Making text from checkers and models storable.

What a tool prints or a model answers can hold code points a database will
not take: PostgreSQL refuses NUL in text and ``\\u0000`` in JSON, and a lone
surrogate (half of a UTF-16 pair, e.g. from a model's ``"\\ud800"``) cannot
be encoded as UTF-8 at all. Refused once, refused on every retry: the
proposal would never finish. Each becomes U+FFFD, the replacement character,
so the text stays readable and says where something was dropped.
"""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"


def storable(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD; well-formed text unchanged."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16, a surrogate pair that arrived as two halves becomes the
        # character it spells; only the halves without a partner are replaced.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text.replace("\x00", REPLACEMENT)


def storable_json(value: Any) -> Any:
    """``value`` with every string in it (object keys included) made ``storable``."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable_json(k): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value
