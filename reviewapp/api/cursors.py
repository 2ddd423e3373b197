"""Opaque keyset cursors over descending ids: stable while rows are being added."""

import base64
import binascii

from ninja.errors import ValidationError

_MARK = "id:"


def encode_cursor(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"{_MARK}{last_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The id the previous page ended at; 422 for anything this module did not issue."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        digits = raw.removeprefix(_MARK)
        # Bounded so the id fits a bigint column.
        if raw.startswith(_MARK) and digits.isascii() and digits.isdigit() and len(digits) <= 18:
            return int(digits)
    except (binascii.Error, ValueError):
        pass
    raise ValidationError(
        [{"loc": ["query", "cursor"], "msg": "not a cursor this API issued", "type": "cursor"}]
    )


def keyset_page(queryset, *, cursor: str | None, limit: int) -> tuple[list, str | None]:
    """One page of `queryset` by descending id, and the cursor to the next (None at the end)."""
    if cursor:
        queryset = queryset.filter(pk__lt=decode_cursor(cursor))
    rows = list(queryset.order_by("-pk")[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1].pk)
    return rows, None
