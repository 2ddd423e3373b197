"""Public-verifiability endpoints: checkpoints, proofs and raw entries.

Checkpoints and proofs are unauthenticated on purpose: they are signed by the
server or checkable against something signed, and reveal nothing but hashes,
so anyone can check the server without trusting it. Raw entries carry every
decision's rationale and every checker's reason, for every client's proposals:
they need a reader — a token with ``read:all`` (a plain ``read`` token sees
only its own client's proposals elsewhere) or a staff/reviewer session —
unless REVIEWAPP_LEDGER_PUBLIC is true. Mounted at ``/api/ledger``. Errors
are JSON ``{"detail": ...}``: 404 for something that does not exist (no
checkpoint yet, an entry or size beyond the tree), 422 for a request that
can never be answered (bad numbers, from > to).
"""

from typing import Annotated

from django.conf import settings
from ninja import Path, Query, Router, Schema
from ninja.errors import HttpError
from ninja.security.http import HttpAuthBase
from pydantic import Field

from reviewapp.core import merkle
from reviewapp.ledger import services
from reviewapp.ledger.models import LedgerEntry
from reviewapp.review.models import ApiClient

from .auth import ApiAuth

MAX_INDEX = 2**62
LeafIndex = Annotated[int, Path(ge=0, le=MAX_INDEX)]
TreeSize = Annotated[int | None, Query(ge=0, le=MAX_INDEX)]


class LedgerErrorOut(Schema):
    detail: str | list[dict]


class CosignatureOut(Schema):
    witness: str = Field(description="the witness's key name")
    key_id: str = Field(description="hex, the signed-note key ID of the witness's key")
    timestamp: int = Field(description="POSIX seconds, when the witness cosigned")


class CheckpointOut(Schema):
    origin: str
    tree_size: int
    root_hash: str = Field(description="hex")
    timestamp: str
    key_id: str
    checkpoint: str = Field(
        description="C2SP tlog-checkpoint signed note: the log's signature line, then one "
        "C2SP tlog-cosignature line (cosignature/v1, Ed25519) per witness that cosigned it"
    )
    cosignatures: list[CosignatureOut] = Field(
        description="the witnesses whose cosignature lines the note carries"
    )


class EntryOut(Schema):
    index: int
    kind: str
    payload: str = Field(description="the exact signed text")
    signature: str = Field(description="base64 ed25519")
    key_id: str
    leaf_hash: str = Field(description="hex SHA-256(0x00 || entry bytes)")


class InclusionOut(Schema):
    index: int
    tree_size: int
    leaf_hash: str
    root_hash: str
    proof: list[str] = Field(description="hex hashes, leaf side first (RFC 6962 PATH)")
    entry: EntryOut


class ConsistencyOut(Schema):
    from_size: int = Field(alias="from")
    to_size: int = Field(alias="to")
    from_root: str
    to_root: str
    proof: list[str] = Field(description="hex hashes (RFC 6962 PROOF)")


class EntriesOut(Schema):
    start: int
    end: int
    tree_size: int
    entries: list[EntryOut]


ERRORS = {404: LedgerErrorOut, 422: LedgerErrorOut}


class LedgerReader(HttpAuthBase):
    """Who may read raw entries: anyone with REVIEWAPP_LEDGER_PUBLIC, else a token with
    ``read:all`` or a session that may read (staff, reviewers)."""

    openapi_scheme = "bearer"
    scope = ApiClient.Scope.READ_ALL.value  # what a token needs

    def __call__(self, request):
        if settings.REVIEWAPP_LEDGER_PUBLIC:
            return "public"
        if request.headers.get("Authorization"):
            return ApiAuth(self.scope)(request)
        return ApiAuth(ApiClient.Scope.READ.value)(request)


def _size_or_latest(size: int | None) -> int:
    if size is not None:
        current = services.tree_size()
        if size > current:
            raise HttpError(404, f"tree size {size} is beyond the ledger's {current} entries")
        return size
    latest = services.latest_checkpoint()
    if latest is None:
        raise HttpError(404, "no checkpoint has been signed yet; pass size=N")
    return latest.tree_size


def checkpoint_latest(request):
    checkpoint = services.latest_checkpoint()
    if checkpoint is None:
        raise HttpError(404, "no checkpoint has been signed yet")
    return services.checkpoint_json(checkpoint)


def inclusion(request, entry: LeafIndex, size: TreeSize = None):
    size = _size_or_latest(size)
    if entry >= size:
        raise HttpError(404, f"entry {entry} is not in the tree of size {size}")
    row = LedgerEntry.objects.filter(leaf_index=entry).first()
    if row is None:
        raise HttpError(404, f"entry {entry} does not exist")
    try:
        proof = services.inclusion_proof(entry, size)
        root = services.root_at(size)
    except (merkle.ProofError, LookupError) as exc:
        raise HttpError(404, str(exc)) from exc
    return {
        "index": entry,
        "tree_size": size,
        "leaf_hash": row.leaf_hash,
        "root_hash": root.hex(),
        "proof": [h.hex() for h in proof],
        "entry": services.entry_json(row),
    }


def consistency(
    request,
    from_size: Annotated[int, Query(ge=0, le=MAX_INDEX, alias="from")],
    to_size: Annotated[int | None, Query(ge=0, le=MAX_INDEX, alias="to")] = None,
):
    to_size = _size_or_latest(to_size)
    if from_size > to_size:
        raise HttpError(422, f"from ({from_size}) must not exceed to ({to_size})")
    try:
        proof = services.consistency_proof(from_size, to_size)
        from_root, to_root = services.root_at(from_size), services.root_at(to_size)
    except (merkle.ProofError, LookupError) as exc:
        raise HttpError(404, str(exc)) from exc
    return {
        "from": from_size,
        "to": to_size,
        "from_root": from_root.hex(),
        "to_root": to_root.hex(),
        "proof": [h.hex() for h in proof],
    }


def entries(
    request,
    start: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    end: Annotated[int | None, Query(ge=0, le=MAX_INDEX)] = None,
):
    size = services.tree_size()
    if start > size:
        raise HttpError(404, f"start {start} is beyond the ledger's {size} entries")
    end = size if end is None else end
    if end < start:
        raise HttpError(422, f"end ({end}) must not be below start ({start})")
    end = min(end, size, start + services.MAX_PAGE)
    rows = LedgerEntry.objects.filter(leaf_index__gte=start, leaf_index__lt=end).order_by(
        "leaf_index"
    )
    return {
        "start": start,
        "end": end,
        "tree_size": size,
        "entries": [services.entry_json(row) for row in rows],
    }


def _operation_id(view: str) -> str:
    # The ids these endpoints had in the OpenAPI description when this module was
    # reviewapp/ledger/api.py: code generated from it names its methods after them.
    return f"reviewapp_ledger_api_{view}"


def build_router() -> Router:
    """A fresh router with every ledger endpoint (a router can be mounted on one API only)."""
    router = Router(tags=["ledger"])
    router.get(
        "/checkpoint",
        operation_id=_operation_id("checkpoint_latest"),
        auth=None,
        response={200: CheckpointOut, **ERRORS},
        summary="The latest signed checkpoint, with its witnesses' cosignatures",
    )(checkpoint_latest)
    router.get(
        "/proof/{entry}",
        operation_id=_operation_id("inclusion"),
        auth=None,
        response={200: InclusionOut, **ERRORS},
        summary="Inclusion proof of an entry in the tree of a given size",
        description="`size` defaults to the latest checkpoint's tree size.",
    )(inclusion)
    router.get(
        "/consistency",
        operation_id=_operation_id("consistency"),
        auth=None,
        response={200: ConsistencyOut, **ERRORS},
        by_alias=True,
        summary="Consistency proof between two tree sizes",
        description="`to` defaults to the latest checkpoint's tree size.",
    )(consistency)
    router.get(
        "/entries",
        operation_id=_operation_id("entries"),
        auth=LedgerReader(),
        response={200: EntriesOut, 401: LedgerErrorOut, 403: LedgerErrorOut, **ERRORS},
        summary="Raw entries for mirroring",
        description=f"Entries `start` ≤ index < `end`, at most {services.MAX_PAGE} per page "
        "(`end` is clipped; follow the returned `end`). Needs a token with `read:all` "
        "(or a staff or reviewer session) unless the server sets REVIEWAPP_LEDGER_PUBLIC.",
    )(entries)
    return router


# Mount with `api.add_router("/ledger", router)`: the endpoints become /api/ledger/...
router = build_router()
