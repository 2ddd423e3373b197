"""Resolve a cite against any text, as the pipeline grounds claims."""

from ninja import Router

from reviewapp.core.cite import resolve_cite

from .auth import ApiAuth
from .schemas import CiteIn, CiteOut, errors

router = Router(tags=["cite"])


@router.post(
    "/cite/resolve",
    auth=ApiAuth(),
    response={200: CiteOut, **errors()},
    summary="Resolve a cite to the span of `source` it quotes",
    description="Offsets in code points, UTF-16 code units and UTF-8 bytes; "
    "all null when the cite quotes nothing in the source.",
)
def cite_resolve(request, payload: CiteIn):
    span = resolve_cite(payload.source, payload.cite)
    if span is None:
        return {
            "resolved": False,
            **dict.fromkeys(
                ("text", "start", "end", "start_utf16", "end_utf16", "start_byte", "end_byte")
            ),
        }
    start_utf16, end_utf16 = span.utf16_range(payload.source)
    start_byte, end_byte = span.byte_range(payload.source)
    return {
        "resolved": True,
        "text": span.text,
        "start": span.start,
        "end": span.end,
        "start_utf16": start_utf16,
        "end_utf16": end_utf16,
        "start_byte": start_byte,
        "end_byte": end_byte,
    }
