"""Request bodies: size-limited, strictly parsed JSON that every store downstream can hold.

Python's json module accepts things the rest of the pipeline cannot: NUL
characters and lone surrogates (PostgreSQL refuses them; UTF-8 cannot encode
them), NaN and Infinity (not JSON, refused by RFC 8785 canonicalisation),
numbers beyond the double range (1e309 reads as infinity), integers beyond
2**53 that no double spells (RFC 8785 numbers are doubles) and nesting deep
enough to blow the recursion limit. Each is a 422 here, naming where in the
body it sits, before any service sees the data.

Integer literals beyond 2**53 that spell a double (1e20 written out, as a
JavaScript RFC 8785 encoder does) are read as that double, so whatever the
API accepts re-canonicalises to the same bytes.
"""

import json
from functools import wraps

from django.conf import settings
from ninja.parser import Parser

from reviewapp.core.json_values import depth_problem, value_problem
from reviewapp.core.signing import MAX_SAFE_INTEGER, integer_as_double

# Where django-ninja locates body fields; every endpoint names its body `payload`.
BODY_LOC = ["body", "payload"]


class BodyRejected(Exception):
    """The request body cannot be taken; carries the status and `detail` to answer with."""

    def __init__(self, status: int, detail):
        super().__init__(detail)
        self.status = status
        self.detail = detail


def invalid(loc: list, msg: str, type_: str) -> BodyRejected:
    """A 422 shaped like django-ninja's own validation errors."""
    return BodyRejected(422, [{"loc": loc, "msg": msg, "type": type_}])


def too_large() -> BodyRejected:
    limit = settings.REVIEWAPP_API_MAX_BODY_BYTES
    return BodyRejected(413, f"request body is larger than the limit of {limit} bytes")


def check_declared_length(request) -> None:
    """Refuse by the declared Content-Length, before anything reads the body."""
    declared = request.META.get("CONTENT_LENGTH") or "0"
    try:
        length = int(declared)
    except ValueError:
        length = -1
    if length < 0:
        # Django would raise a bare ValueError on reading the body.
        raise BodyRejected(400, "Content-Length must be a non-negative integer")
    if length > settings.REVIEWAPP_API_MAX_BODY_BYTES:
        raise too_large()


def _too_deep(loc: list) -> BodyRejected:
    found = depth_problem(loc)
    return invalid(found.loc, found.msg, found.type)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _integer(literal: str) -> int | float:
    value = int(literal)
    if abs(value) > MAX_SAFE_INTEGER:
        # Left an int when no double spells it; _check_values then says where.
        double = integer_as_double(value)
        return value if double is None else double
    return value


def parse_json(raw: bytes, loc_prefix: list):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid(loc_prefix, f"body is not valid UTF-8: {exc.reason}", "json_invalid") from exc
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_int=_integer)
    except RecursionError as exc:
        raise _too_deep(loc_prefix) from exc
    except ValueError as exc:
        raise invalid(loc_prefix, f"malformed JSON: {exc}", "json_invalid") from exc
    _check_values(data, loc_prefix)
    return data


def _check_values(data, loc_prefix: list) -> None:
    if found := value_problem(data):
        raise invalid([*loc_prefix, *found.loc], found.msg, found.type)


class GuardedParser(Parser):
    """JSON bodies through `parse_json`, re-checking the size actually read.

    django-ninja turns any exception raised here into a 400; the API's
    HttpError handler unwraps a BodyRejected cause into its own status.
    """

    def parse_body(self, request):
        # The declared length was checked before auth; this catches a server that
        # hands over a body without one (chunked, or ASGI).
        if len(request.body) > settings.REVIEWAPP_API_MAX_BODY_BYTES:
            raise too_large()
        return parse_json(request.body, BODY_LOC)


def size_guard(render):
    """A view decorator factory: refuse oversized bodies before auth or parsing run."""

    def decorator(run):
        @wraps(run)
        def guarded(request, *args, **kwargs):
            try:
                check_declared_length(request)
            except BodyRejected as exc:
                return render(request, exc)
            return run(request, *args, **kwargs)

        return guarded

    return decorator
