"""Planning, starting and cancelling replays, and the regression set. Every write is audited."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from reviewapp.audit.models import AuditEntry
from reviewapp.audit.services import audit_record
from reviewapp.core.quorum import Quorum, QuorumError
from reviewapp.core.replay import compare, lens_changes, replay_outcome
from reviewapp.review.models import Decision, Evidence, Judgement, Lens, Panel, Proposal

from .models import RegressionCase, Replay, ReplayCase

# What a draft may change on a lens: what it says and whom it asks.
DRAFT_LENS_FIELDS = ("instructions", "model", "base_url", "mandate")
# Backends a replay can run here; an external lens's judgements arrive over the API.
RUNNABLE = (Lens.Backend.LLM, Lens.Backend.CONSTRAINTS, Lens.Backend.RECORDED)

AUDIT_TYPE = "replay"


def _user(user):
    return user if user is not None and user.is_authenticated else None


@transaction.atomic
def regression_case_add(*, proposal: Proposal, user=None) -> RegressionCase:
    """Keep a decided proposal in the regression set (once; adding it again changes nothing)."""
    if not Decision.objects.filter(proposal=proposal).exists():
        raise ValidationError(
            f"Proposal {proposal.pk} has no decision yet: only a decided proposal can be "
            "replayed against the decision it got."
        )
    case, created = RegressionCase.objects.get_or_create(
        proposal=proposal, defaults={"added_by": _user(user)}
    )
    if created:
        audit_record(
            actor=_user(user),
            action=AuditEntry.Action.CREATE,
            target_type="regression case",
            target=case,
            note=f"proposal {proposal.pk} added to the regression set",
        )
    return case


def _proposals(panel: Panel, source: str, size: int) -> list[tuple[Proposal, str]]:
    """The proposals a replay runs on, newest decision first, each with its decision's outcome."""
    decisions = Decision.objects.filter(proposal__panel=panel).select_related("proposal")
    if source == Replay.Source.REGRESSION:
        decisions = decisions.filter(proposal__regression_case__isnull=False)
    else:
        decisions = decisions.filter(basis=Decision.Basis.REVIEWER)
    decisions = decisions.order_by("-created_at", "-id")[:size]
    return [(d.proposal, d.outcome) for d in decisions]


def _draft_lenses(
    members: list[Lens], lens_changes: dict[int, dict], current_ids: set[int]
) -> list[dict]:
    lenses = []
    for lens in members:
        asked = lens_changes.get(lens.pk, {})
        changes = {
            name: value
            for name, value in asked.items()
            if name in DRAFT_LENS_FIELDS and value != getattr(lens, name)
        }
        lenses.append(
            {
                "id": lens.pk,
                "name": lens.name,
                "backend": lens.backend,
                "changes": changes,
                # Changed or new to the panel: judged afresh wherever it has no stored answer
                # that still holds; unchanged members reuse what they said.
                "changed": bool(changes),
                "new": lens.pk not in current_ids,
            }
        )
    return lenses


def stored_verdicts(proposal_ids: list[int]) -> dict[int, dict[int, str]]:
    stored: dict[int, dict[int, str]] = {}
    for proposal_id, lens_id, verdict in Judgement.objects.filter(
        proposal_id__in=proposal_ids
    ).values_list("proposal_id", "lens_id", "verdict"):
        stored.setdefault(proposal_id, {})[lens_id] = verdict
    return stored


def checker_verdicts(proposal_ids: list[int]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for proposal_id, verdict in Evidence.objects.filter(proposal_id__in=proposal_ids).values_list(
        "proposal_id", "verdict"
    ):
        found.setdefault(proposal_id, []).append(verdict)
    return found


def lenses_to_run(draft: dict, stored: dict[int, str]) -> list[dict]:
    """The draft's lenses judged afresh on a proposal with these stored verdicts (by lens id)."""
    return [
        lens
        for lens in draft["lenses"]
        if lens["backend"] in RUNNABLE and (lens["changed"] or lens["id"] not in stored)
    ]


def describe(draft: dict) -> str:
    parts = []
    current = draft["current"]
    for lens in draft["lenses"]:
        if lens["changed"]:
            parts.append(f"{lens['name']}: {', '.join(sorted(lens['changes']))}")
    added = [lens["name"] for lens in draft["lenses"] if lens["new"]]
    removed = [n for n in current["lenses"] if n not in {x["name"] for x in draft["lenses"]}]
    if added:
        parts.append("adds " + ", ".join(added))
    if removed:
        parts.append("removes " + ", ".join(removed))
    if draft["need"] != current["need"]:
        parts.append(f"need {current['need']} → {draft['need']}")
    return "; ".join(parts) or "no change (the current configuration)"


@transaction.atomic
def _refuse_endpoint_change_without_lens_rights(user, lens_changes: dict[int, dict], members):
    """A drafted endpoint receives the lens's API key when the replay runs, so only someone
    who may change the lens itself (and could point it there for real) may draft one."""
    if user is None or user.has_perm("review.change_lens"):
        return
    by_id = {lens.pk: lens for lens in members}
    for lens_id, changes in lens_changes.items():
        lens = by_id.get(lens_id)
        if lens is not None and "base_url" in changes and changes["base_url"] != lens.base_url:
            raise ValidationError(
                {
                    "base_url": f"Changing the endpoint of lens {lens.name!r} in a replay sends "
                    "its API key to the new address, so it needs the permission to change "
                    "lenses; ask an admin who has it, or replay without changing the endpoint."
                }
            )


def replay_plan(
    *,
    panel: Panel,
    user=None,
    members: list[Lens] | None = None,
    need: int | None = None,
    lens_changes: dict[int, dict] | None = None,
    source: str = Replay.Source.RECENT,
    size: int = 100,
) -> Replay:
    """Store a planned replay: its proposals, both configurations and the calls it would make.

    Nothing runs until `replay_start`: the planned calls are shown first. The
    draft is checked and described (`_replay_draft`), then each proposal is a
    case with its outcome under the current panel (`_plan_cases`).
    """
    if size < 1:
        raise ValidationError({"size": "Replay at least one proposal."})
    current = panel.ordered_lenses()
    draft = _replay_draft(panel, current, user, members, need, lens_changes or {})
    chosen = _proposals(panel, source, size)
    if not chosen:
        where = "the regression set" if source == Replay.Source.REGRESSION else "human decisions"
        raise ValidationError(
            f"Panel {panel.name!r} has no decided proposals in {where} to replay on."
        )
    replay = Replay.objects.create(
        panel=panel,
        panel_name=panel.name,
        draft=draft,
        description=describe(draft)[:300],
        source=source,
        size=size,
        created_by=_user(user),
    )
    cases, calls = _plan_cases(replay, panel, current, draft, chosen)
    ReplayCase.objects.bulk_create(cases)
    replay.planned_calls = calls
    replay.save(update_fields=["planned_calls"])
    audit_record(
        actor=_user(user),
        action=AuditEntry.Action.CREATE,
        target_type=AUDIT_TYPE,
        target=replay,
        changes={"draft": {"old": None, "new": draft}},
        note=f"planned on {len(cases)} proposals, {calls} LLM calls",
    )
    return replay


def _replay_draft(panel: Panel, current, user, members, need, lens_changes: dict) -> dict:
    """The draft configuration beside the current one; refused (ValidationError) if its
    quorum cannot be met or `user` may not change a lens's endpoint."""
    members = list(members) if members else current
    need = need or panel.need
    try:
        Quorum(need, [lens.name for lens in members])
    except QuorumError as exc:
        raise ValidationError({"need": str(exc)}) from exc
    _refuse_endpoint_change_without_lens_rights(user, lens_changes, members)
    return {
        "need": need,
        "requires_sign_off": panel.requires_sign_off,
        "lenses": _draft_lenses(members, lens_changes, {lens.pk for lens in current}),
        "current": {
            "need": panel.need,
            "lenses": [lens.name for lens in current],
            "lens_ids": [lens.pk for lens in current],
            "version": panel.version,
        },
    }


def _plan_cases(replay: Replay, panel: Panel, current, draft: dict, chosen):
    """A case per chosen proposal with the current panel's outcome from its stored
    verdicts, and how many LLM calls the draft would make on them all."""
    ids = [proposal.pk for proposal, _ in chosen]
    stored = stored_verdicts(ids)
    checks = checker_verdicts(ids)
    cases, calls = [], 0
    for position, (proposal, human) in enumerate(chosen):
        by_id = stored.get(proposal.pk, {})
        verdicts = {lens.name: by_id[lens.pk] for lens in current if lens.pk in by_id}
        cases.append(
            ReplayCase(
                replay=replay,
                proposal=proposal,
                position=position,
                human_outcome=human,
                current_outcome=replay_outcome(
                    need=panel.need,
                    lenses=[lens.name for lens in current],
                    verdicts=verdicts,
                    checker_verdicts=checks.get(proposal.pk, []),
                    requires_sign_off=panel.requires_sign_off,
                ),
            )
        )
        calls += sum(
            1 for lens in lenses_to_run(draft, by_id) if lens["backend"] == Lens.Backend.LLM
        )
    return cases, calls


@transaction.atomic
def replay_start(*, replay: Replay, user=None) -> bool:
    """Start a planned replay; False if it was already started (or cancelled)."""
    # Conditional update: of two clicks on "Start", one enqueues the run.
    started = Replay.objects.filter(pk=replay.pk, status=Replay.Status.PLANNED).update(
        status=Replay.Status.PENDING, started_at=timezone.now()
    )
    if started:
        audit_record(
            actor=_user(user),
            action=AuditEntry.Action.TRIAL,
            target_type=AUDIT_TYPE,
            target=replay,
            note=f"started: {replay.planned_calls} LLM calls planned",
        )
        from .tasks import run_replay  # here: tasks.py imports this module (the sweeper)

        transaction.on_commit(lambda: run_replay.delay(replay.pk))
    replay.refresh_from_db()
    return bool(started)


@transaction.atomic
def replay_cancel(*, replay: Replay, user=None) -> bool:
    """Stop a replay that has not finished; what it finished stays. False if it had ended."""
    # Conditional update: a replay finishing at the same moment stays finished.
    cancelled = Replay.objects.filter(
        pk=replay.pk,
        status__in=[Replay.Status.PLANNED, Replay.Status.PENDING, Replay.Status.RUNNING],
    ).update(status=Replay.Status.CANCELLED, finished_at=timezone.now())
    if cancelled:
        replay_store_result(replay.pk)
        audit_record(
            actor=_user(user),
            action=AuditEntry.Action.UPDATE,
            target_type=AUDIT_TYPE,
            target=replay,
            changes={"status": {"old": replay.status, "new": Replay.Status.CANCELLED}},
            note="cancelled",
        )
    replay.refresh_from_db()
    return bool(cancelled)


def replay_store_result(replay_id: int) -> None:
    """The side-by-side counts over the cases finished so far, stored on the replay, with
    what each lens's verdicts did (the current panel's stored ones beside the draft's)."""
    cases = list(
        ReplayCase.objects.filter(replay_id=replay_id, done_at__isnull=False).values_list(
            "proposal_id", "human_outcome", "current_outcome", "draft_outcome", "draft_verdicts"
        )
    )
    result = compare(case[:4] for case in cases)
    result["replayed"] = len(cases)
    current = Replay.objects.values_list("draft", flat=True).get(pk=replay_id)["current"]
    names = dict(zip(current.get("lens_ids", []), current["lenses"], strict=False))
    stored = stored_verdicts([case[0] for case in cases])
    result["lenses"] = [
        change.to_dict()
        for change in lens_changes(
            (
                human,
                {
                    names[lens_id]: verdict
                    for lens_id, verdict in stored.get(proposal_id, {}).items()
                    if lens_id in names
                },
                {name: shown["verdict"] for name, shown in (verdicts or {}).items()},
            )
            for proposal_id, human, _, _, verdicts in cases
        )
    ]
    Replay.objects.filter(pk=replay_id).update(result=result)


def progress(replay: Replay) -> tuple[int, int]:
    """(cases finished, cases) of a replay."""
    cases = ReplayCase.objects.filter(replay=replay)
    return cases.filter(done_at__isnull=False).count(), cases.count()


def replays_lost() -> list[int]:
    """Replays that should be running but no worker runs: never picked up, or heartbeat gone."""
    from .models import stale_before

    return list(
        Replay.objects.filter(
            Q(status=Replay.Status.PENDING, started_at__lt=stale_before())
            | Q(status=Replay.Status.RUNNING, heartbeat_at__lt=stale_before())
        ).values_list("pk", flat=True)
    )
