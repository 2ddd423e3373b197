"""The ledger served as C2SP tlog-tiles under /ledger/, for monitors with standard tile clients.

`/ledger/checkpoint` is the latest signed checkpoint; `/ledger/tile/<L>/<N>[.p/<W>]`
the tree's hashes and `/ledger/tile/entries/<N>[.p/<W>]` its entries. A tile is
read from what appends already store (leaf hashes, and every perfect subtree:
level 8·L is a tile's level), so serving one costs one indexed range query.
Tiles are immutable once their hashes exist, so they are cacheable forever; a
tile whose hashes do not all exist yet is a 404, never a shorter tile.
Hashes reveal nothing and need no login, as the proofs under /api/ledger;
entry bundles carry rationales and follow the raw entries' rule.
"""

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_GET

from reviewapp.core import tiles
from reviewapp.review.access import may_sign_decisions
from reviewapp.review.models import ApiClient
from reviewapp.review.services.clients import api_client_for_token

from .models import LedgerEntry, LedgerNode
from .services import checkpoint_note_with_cosignatures, latest_checkpoint

FOREVER = "max-age=31536000, immutable"


def _text(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def checkpoint_view(request):
    checkpoint = latest_checkpoint()
    if checkpoint is None:
        return _text(404, "no checkpoint has been signed yet")
    # With its witnesses' cosignatures: a tile client checks its witness policy here too.
    response = HttpResponse(
        checkpoint_note_with_cosignatures(checkpoint), content_type="text/plain; charset=utf-8"
    )
    # The spec: mutable, so no caching beyond a few seconds.
    response["Cache-Control"] = "public, max-age=5"
    return response


def _hashes(tile: tiles.Tile) -> list[str] | None:
    """The tile's hex hashes, or None while any of them does not exist."""
    span = (tile.first, tile.first + tile.width)
    if tile.tree_level == 0:
        rows = LedgerEntry.objects.filter(leaf_index__gte=span[0], leaf_index__lt=span[1])
        hashes = list(rows.order_by("leaf_index").values_list("leaf_hash", flat=True))
    else:
        rows = LedgerNode.objects.filter(
            level=tile.tree_level, node_index__gte=span[0], node_index__lt=span[1]
        )
        hashes = list(rows.order_by("node_index").values_list("hash", flat=True))
    return hashes if len(hashes) == tile.width else None


_NEEDS_READER = (
    "entry bundles carry every decision's rationale: they need a token with read:all or a "
    "staff or reviewer login (tiles of hashes need neither)"
)


def _entries_refusal(request) -> tuple[int, str] | None:
    """The rule of GET /api/ledger/entries: public, a `read:all` token, or staff or a reviewer."""
    if settings.REVIEWAPP_LEDGER_PUBLIC:
        return None
    header = request.headers.get("Authorization")
    if header:
        scheme, _, token = header.partition(" ")
        client = api_client_for_token(token.strip()) if scheme.lower() == "bearer" else None
        if client is None:
            return 401, "unknown or revoked token; " + _NEEDS_READER
        return None if ApiClient.Scope.READ_ALL in client.scopes else (403, _NEEDS_READER)
    user = request.user
    if not user.is_authenticated:
        return 401, _NEEDS_READER
    return (
        None
        if user.is_active and (user.is_staff or may_sign_decisions(user))
        else (403, _NEEDS_READER)
    )


def _entries(tile: tiles.Tile) -> list[bytes] | None:
    rows = LedgerEntry.objects.filter(
        leaf_index__gte=tile.first, leaf_index__lt=tile.first + tile.width
    )
    entries = [
        text.encode() for text in rows.order_by("leaf_index").values_list("entry", flat=True)
    ]
    return entries if len(entries) == tile.width else None


@require_GET
@gzip_page  # the spec: bundles SHOULD be compressed over HTTP
def tile_view(request, path: str):
    try:
        tile = tiles.parse_tile_path(path)
    except tiles.TilePathError as exc:
        return _text(404, str(exc))
    if tile.is_entries:
        if refusal := _entries_refusal(request):
            return _text(*refusal)
        entries = _entries(tile)
        if entries is None:
            return _text(404, f"the ledger does not hold the {tile.width} entries of this bundle")
        try:
            body = tiles.entry_bundle(entries)
        except ValueError as exc:
            return _text(422, f"{exc}; read it from /api/ledger/entries?start={tile.first}")
        cache = "private, " + FOREVER if not settings.REVIEWAPP_LEDGER_PUBLIC else FOREVER
    else:
        hashes = _hashes(tile)
        if hashes is None:
            return _text(404, f"the ledger does not hold the {tile.width} hashes of this tile yet")
        body = b"".join(bytes.fromhex(h) for h in hashes)
        cache = "public, " + FOREVER
    response = HttpResponse(body, content_type="application/octet-stream")
    response["Cache-Control"] = cache
    # A bundle differs by who may read it; a hash tile does not.
    if tile.is_entries:
        response["Vary"] = "Authorization, Cookie"
    return response
