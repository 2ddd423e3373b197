"""The ledger over plain HTTP: its JSONL download, and its C2SP tlog-tiles under /ledger/.

`/ledger/checkpoint` is the latest signed checkpoint; `/ledger/tile/<L>/<N>[.p/<W>]`
the tree's hashes and `/ledger/tile/entries/<N>[.p/<W>]` its entries, for
monitors with standard tile clients. Tiles are immutable once their hashes
exist, so they are cacheable forever; one not complete yet is a 404. Hashes
reveal nothing and need no login, as the proofs under /api/ledger; entry
bundles and the download carry rationales: REVIEWAPP_LEDGER_PUBLIC, or a
reader (``may_read_ledger``; for bundles also a `read:all` token, as
/api/ledger/entries).
"""

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_GET

from reviewapp.core import tiles
from reviewapp.ledger.cosigning import configured_witnesses, latest_cosigned_checkpoint
from reviewapp.ledger.services import (
    checkpoint_note_with_cosignatures,
    export_lines,
    latest_checkpoint,
)
from reviewapp.ledger.tiles import tile_entries, tile_hashes
from reviewapp.review.access import may_read_ledger
from reviewapp.review.models import ApiClient
from reviewapp.review.services.clients import api_client_for_token

FOREVER = "max-age=31536000, immutable"


@require_GET
def export_view(request):
    """`?after=N` exports only entries after ledger index N.

    Staff and reviewers only, unless REVIEWAPP_LEDGER_PUBLIC opens it to anyone.
    """
    if not settings.REVIEWAPP_LEDGER_PUBLIC:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not may_read_ledger(request.user):
            raise PermissionDenied("Only reviewers can download the ledger.")
    after = request.GET.get("after")
    if after not in (None, ""):
        if not (after.isascii() and after.isdigit()) or len(after) > 18:
            return HttpResponseBadRequest("after must be a ledger index (a non-negative integer)")
        after = int(after)
    else:
        after = None
    # As export_decisions: with witnesses, no checkpoint newer than the latest they cosigned,
    # so a verifier holding the download to them does not fail on one they have not seen yet.
    through = latest_cosigned_checkpoint() if configured_witnesses() else None
    response = StreamingHttpResponse(
        export_lines(after=after, through=through), content_type="application/jsonl; charset=utf-8"
    )
    suffix = f"-after-{after}" if after is not None else ""
    response["Content-Disposition"] = f'attachment; filename="reviewapp-ledger{suffix}.jsonl"'
    response["Cache-Control"] = "no-store"
    return response


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
    if not request.user.is_authenticated:
        return 401, _NEEDS_READER
    return None if may_read_ledger(request.user) else (403, _NEEDS_READER)


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
        entries = tile_entries(tile)
        if entries is None:
            return _text(404, f"the ledger does not hold the {tile.width} entries of this bundle")
        try:
            body = tiles.entry_bundle(entries)
        except ValueError as exc:
            return _text(422, f"{exc}; read it from /api/ledger/entries?start={tile.first}")
        cache = "private, " + FOREVER if not settings.REVIEWAPP_LEDGER_PUBLIC else FOREVER
    else:
        hashes = tile_hashes(tile)
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
