"""Each lens's agreement with the reviewers who adjudicated what it judged."""

from datetime import date

from django.http import Http404
from django.shortcuts import get_object_or_404
from ninja import Router, Schema
from ninja.errors import HttpError

from reviewapp.calibration.queries import Window, agreement_out, lens_figures
from reviewapp.core.json_values import string_problem
from reviewapp.review.models import Lens
from reviewapp.review.services.visibility import lens_agreement_readers

from .auth import ApiAuth
from .schemas import errors

router = Router(tags=["lenses"])


class WindowOut(Schema):
    since: date | None
    until: date | None


class AgreementOut(Schema):
    lens: str
    n: int
    n_by_kind: dict[str, int]
    agreement: float | None
    kappa: float | None
    kappa_ci: list[float] | None
    kappa_undefined_reason: str | None
    true_pass_rate: float | None
    true_fail_rate: float | None
    claims_marked: int
    claims_marked_incorrect: float | None
    claims_marked_incorrect_reason: str | None
    drifting: bool
    window: WindowOut


@router.get(
    "/lenses/{name}/agreement",
    auth=ApiAuth("read"),
    response={200: AgreementOut, **errors(404)},
    summary="A lens's agreement with the reviewers",
    description="Over the human decisions made from `since` to `until` (UTC dates, both "
    "included; either may be left out): how many proposals the lens judged that a reviewer "
    "decided (`n`, and by kind: escalations and audits), the share where its verdict matched "
    "the decision (approve = pass), Cohen's kappa with its 95 % interval (Fleiss, Cohen & "
    "Everitt 1969), and its true-pass and true-fail rates. `kappa` is null, with "
    "`kappa_undefined_reason`, when there are too few decisions or only one class. "
    "`claims_marked` counts the lens's cited claims reviewers marked (correct, incorrect or "
    "irrelevant) in their decisions over the window, and `claims_marked_incorrect` is the share "
    "of those marked incorrect: null, with `claims_marked_incorrect_reason`, when none was. "
    "The figures count every client's proposals: a token reads them with `read:all` (or as a "
    "reviewer's personal token), or for an external lens that names its client as a judge; "
    "any other lens is a 404 to it.",
)
def lens_agreement(request, name: str, since: date | None = None, until: date | None = None):
    if since and until and since > until:
        raise HttpError(422, f"since ({since}) is after until ({until}): swap them")
    if string_problem(name):  # no lens is so named, and PostgreSQL refuses a NUL outright
        raise Http404("no such lens")
    lens = get_object_or_404(Lens.objects.only("id", "name", "backend"), name=name)
    client = request.auth.client
    if client is not None and not lens_agreement_readers(lens=lens, clients=[client]):
        raise HttpError(
            404,
            f"no lens {name!r} whose agreement this token may read: the figures count every "
            "client's proposals, so they need 'read:all' (or a reviewer's personal token), "
            "or an external lens that names this token's client as a judge",
        )
    window = Window(since=since, until=until)
    (figures,) = lens_figures(window, lens=lens)
    return agreement_out(figures, window)
