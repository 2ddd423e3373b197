"""RFC 8785 canonical JSON with holes: encode a payload before some of its values are known.

A decision's payload is complete except for its place in the chain (the
previous decision's hash and the time it was decided), which are only known
once the chain head is locked, and every decision waits for that lock in
turn. Canonicalising the whole payload there would put the encoder under the
lock; instead it runs before, with a unique marker in each hole, and under
the lock the holes are filled by splicing.

Splicing gives exactly ``canonical_json`` of the filled payload: RFC 8785
orders an object's keys by the keys alone, never by their values, and a
value's canonical encoding does not depend on where it stands, so each hole
is filled with ``canonical_json`` of its value at the marker's fixed place.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .signing import canonical_json

_MARKER_PREFIX = "reviewapp-hole-"


@dataclass(frozen=True)
class CanonicalTemplate:
    """The canonical bytes of a payload around its holes: ``parts`` interleave with ``holes``."""

    parts: tuple[bytes, ...]
    holes: tuple[str, ...]

    @classmethod
    def build(cls, payload: Mapping[str, Any], holes: Iterable[str]) -> CanonicalTemplate:
        """Encode ``payload`` with each top-level key in ``holes`` left open.

        Raises ValueError if a hole's marker does not occur exactly once in
        the encoding (the payload would then already hold a marker's text).
        """
        markers = {hole: f"{_MARKER_PREFIX}{secrets.token_hex(16)}" for hole in holes}
        encoded = canonical_json({**payload, **markers})
        at = {}
        for hole, marker in markers.items():
            quoted = canonical_json(marker)
            if encoded.count(quoted) != 1:
                raise ValueError(f"the marker of hole {hole!r} is not in the encoding exactly once")
            at[hole] = (encoded.index(quoted), len(quoted))
        parts, order, start = [], [], 0
        for hole, (position, length) in sorted(at.items(), key=lambda item: item[1]):
            parts.append(encoded[start:position])
            order.append(hole)
            start = position + length
        parts.append(encoded[start:])
        return cls(tuple(parts), tuple(order))

    def fill(self, values: Mapping[str, Any]) -> bytes:
        """``canonical_json`` of the payload with ``values`` in its holes (every hole, no more)."""
        if values.keys() != set(self.holes):
            raise ValueError(f"fill exactly the holes {sorted(self.holes)}, not {sorted(values)}")
        out = [self.parts[0]]
        for hole, part in zip(self.holes, self.parts[1:], strict=True):
            out += (canonical_json(values[hole]), part)
        return b"".join(out)
