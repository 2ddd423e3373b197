"""Submitting proposals and moving them through the pipeline."""

import hashlib
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from reviewapp.core.quorum import Quorum, QuorumError
from reviewapp.core.signing import canonical_json

from .. import events
from ..models import ApiClient, AwaitedLens, CheckerConfig, Lens, Panel, PanelLens, Proposal
from ..statements import active_panel_named, proposal_begin, proposal_insert
from .judgements import answered_lens_ids


class SubmissionConflict(Exception):
    """The same external reference was submitted before with a different body."""


class PanelUnavailable(Exception):
    """The named panel does not exist or is not active."""


def _members_sql() -> str:
    lens, panel_lens = Lens._meta.db_table, PanelLens._meta.db_table
    checker = CheckerConfig._meta.db_table
    through = Panel.checkers.through._meta
    panel_column = through.get_field("panel").column
    checker_column = through.get_field("checkerconfig").column
    return (
        f"SELECT 0, l.id, l.name, l.version, l.backend, pl.position, pl.id"
        f" FROM {panel_lens} pl JOIN {lens} l ON l.id = pl.lens_id WHERE pl.panel_id = %s"
        f" UNION ALL SELECT 1, c.id, c.name, c.version, c.kind, 0, 0"
        f" FROM {through.db_table} pc JOIN {checker} c ON c.id = pc.{checker_column}"
        f" WHERE pc.{panel_column} = %s AND c.active"
        # Lenses in their panel order, then checkers by name.
        " ORDER BY 1, 6, 7, 3"
    )


_MEMBERS_SQL = _members_sql()


def _panel_members(panel_id: int) -> tuple[list[tuple], list[tuple]]:
    """The panel's lenses in order and its active checkers by name, as (id, name, version,
    backend or kind), in one statement.

    Raw SQL: every submission reads them, and the ORM spends longer composing the two
    joined queries than the database spends answering them. Only the columns the
    snapshot keeps: lens and checker rows carry instructions, mandates and settings
    that every submission would decode.
    """
    lenses, checkers = [], []
    with connection.cursor() as cursor:
        cursor.execute(_MEMBERS_SQL, [panel_id, panel_id])
        for member, *row in cursor.fetchall():
            (checkers if member else lenses).append(tuple(row[:4]))
    return lenses, checkers


def panel_snapshot(panel: Panel) -> dict:
    """The panel as it is now: what a proposal is judged with, frozen at submission."""
    lenses, checkers = _panel_members(panel.pk)
    return {
        "id": panel.pk,
        "name": panel.name,
        "version": panel.version,
        "need": panel.need,
        "grounding_policy": panel.grounding_policy,
        "requires_sign_off": panel.requires_sign_off,
        "external_deadline_seconds": panel.external_deadline_seconds,
        "lenses": [
            {"id": pk, "name": name, "version": version, "backend": backend}
            for pk, name, version, backend in lenses
        ],
        "checkers": [
            {"id": pk, "name": name, "version": version, "kind": kind}
            for pk, name, version, kind in checkers
        ],
    }


def _request_digest(**fields) -> str:
    return hashlib.sha256(canonical_json(fields)).hexdigest()


def proposal_submit(
    *,
    panel_name: str,
    content: str,
    thought_process: str = "",
    title: str = "",
    external_ref: str | None = None,
    metadata: dict | None = None,
    client: ApiClient | None = None,
    submitted_by=None,
) -> tuple[Proposal, bool]:
    """Store a proposal and enqueue its evaluation after commit.

    Returns (proposal, created). Re-submitting the same body under the same
    external reference returns the first proposal; a different body under it
    raises SubmissionConflict.
    """
    metadata = metadata or {}
    panel = active_panel_named.first(panel_name)
    if panel is None:
        raise PanelUnavailable(panel_name)
    request_sha256 = _request_digest(
        panel=panel_name,
        content=content,
        thought_process=thought_process,
        title=title,
        metadata=metadata,
    )
    if external_ref is not None:
        existing = _existing_submission(client, external_ref)
        if existing is not None:
            return _same_or_conflict(existing, request_sha256), False

    snapshot = panel_snapshot(panel)
    try:
        Quorum(snapshot["need"], [entry["name"] for entry in snapshot["lenses"]])
    except QuorumError as exc:
        raise PanelUnavailable(f"{panel_name}: {exc}") from exc
    try:
        proposal = _proposal_create(
            panel=panel,
            snapshot=snapshot,
            client=client,
            submitted_by=submitted_by,
            title=title,
            content=content,
            thought_process=thought_process,
            metadata=metadata,
            external_ref=external_ref,
            request_sha256=request_sha256,
        )
    except IntegrityError:
        # Two identical submissions raced past the lookup; the unique
        # constraint let exactly one in.
        existing = _existing_submission(client, external_ref)
        if existing is None:
            raise
        return _same_or_conflict(existing, request_sha256), False
    return proposal, True


def _proposal_create(*, panel: Panel, snapshot: dict, **fields) -> Proposal:
    """The proposal with its frozen panel and the external lenses it awaits, in one
    transaction that also tells who listens; its evaluation is enqueued after commit."""
    worker_lenses = worker_lens_ids(snapshot)
    now = timezone.now()
    with transaction.atomic():
        proposal = Proposal(
            panel=panel,
            panel_version=panel.version,
            panel_snapshot=snapshot,
            content_sha256=hashlib.sha256(fields["content"].encode()).hexdigest(),
            lenses_asked=len(snapshot["lenses"]),
            # With no lens for the worker to run, evaluation has begun:
            # the external lenses are already being waited for.
            status=Proposal.Status.QUEUED if worker_lenses else Proposal.Status.EVALUATING,
            evaluation_started_at=None if worker_lenses else now,
            external_deadline_at=_external_deadline(snapshot, now),
            **fields,
        )
        proposal_insert(proposal)
        # As rows, so "which proposals may this client judge" is a join.
        AwaitedLens.objects.bulk_create(
            AwaitedLens(proposal=proposal, lens_id=lens_id)
            for lens_id in external_lens_ids(snapshot)
        )
        events.proposal_submitted.send(sender=Proposal, proposal=proposal)  # commits with it
        # robust: the proposal is stored either way; if the broker is down
        # the client still gets its 202 and the sweeper enqueues it later.
        if worker_lenses:
            transaction.on_commit(lambda: _enqueue_evaluation(proposal.pk), robust=True)
    return proposal


def _existing_submission(client, external_ref):
    return Proposal.objects.filter(client=client, external_ref=external_ref).first()


def _same_or_conflict(existing: Proposal, request_sha256: str) -> Proposal:
    if existing.request_sha256 != request_sha256:
        raise SubmissionConflict(
            f"external_ref {existing.external_ref!r} was already used for proposal "
            f"{existing.pk} with a different body"
        )
    return existing


def worker_lens_ids(snapshot: dict) -> list[int]:
    """The snapshot's lenses that the worker runs (external lenses answer through the API)."""
    return [e["id"] for e in snapshot["lenses"] if e["backend"] != Lens.Backend.EXTERNAL]


def external_lens_ids(snapshot: dict) -> list[int]:
    """The snapshot's lenses whose judgements arrive through the API."""
    return [e["id"] for e in snapshot["lenses"] if e["backend"] == Lens.Backend.EXTERNAL]


def _external_deadline(snapshot: dict, now):
    if external_lens_ids(snapshot):
        return now + timedelta(seconds=snapshot["external_deadline_seconds"])
    return None


def _enqueue_evaluation(proposal_id: int) -> None:
    """One task per proposal, whatever its lenses (its LLM lenses go on from it to the loop)."""
    from ..evaluation.tasks import evaluate_proposal

    evaluate_proposal.delay(proposal_id)


def proposal_begin_evaluation(*, proposal_id: int) -> None:
    """Mark a queued proposal as evaluating: a worker has started on its first lens."""
    now = timezone.now()
    # Conditional update: the lenses start in parallel, and only the first
    # one to get here sets the start time.
    proposal_begin(
        proposal_id, status=Proposal.Status.EVALUATING, evaluation_started_at=now, updated_at=now
    )


def proposals_past_external_deadline() -> list[int]:
    """Evaluating proposals whose external lenses are no longer waited for."""
    return list(
        Proposal.objects.filter(
            status=Proposal.Status.EVALUATING, external_deadline_at__lte=timezone.now()
        )
        .order_by("external_deadline_at")
        .values_list("pk", flat=True)[:500]
    )


def lenses_to_run(proposal: Proposal) -> list[Lens]:
    """Lenses of the snapshot that the worker runs and that have not answered yet."""
    answered = answered_lens_ids(proposal.pk)
    ids = [i for i in worker_lens_ids(proposal.panel_snapshot) if i not in answered]
    by_id = Lens.objects.in_bulk(ids)
    return [by_id[i] for i in ids if i in by_id]


def proposals_stuck(*, older_than: timedelta) -> list[int]:
    """Proposals still queued or evaluating after `older_than`: candidates for re-enqueueing."""
    cutoff = timezone.now() - older_than
    return list(
        Proposal.objects.filter(
            Q(status=Proposal.Status.QUEUED) | Q(status=Proposal.Status.EVALUATING),
            updated_at__lt=cutoff,
        ).values_list("pk", flat=True)[:500]
    )


def proposal_swept(*, proposal_id: int) -> None:
    """Mark a proposal as re-sent by the sweeper: counted, and not re-sent in a tight loop."""
    # F(): two sweeps racing each count once.
    Proposal.objects.filter(pk=proposal_id).update(
        updated_at=timezone.now(), sweeps=F("sweeps") + 1
    )
