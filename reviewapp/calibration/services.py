"""Writing human labels with each reviewer decision and audit verdict; catching a lens's drift.

`labels_record` runs inside a reviewer decision's own transaction (on review's
`decision_appended` event), `audit_labels_record` inside an audit verdict's (on
`audit_verdict_signed`; see receivers.py), so a label exists exactly when its
decision or verdict does; `labels_rebuild` writes them all again from both in a few
statements (after a bulk load, or to backfill). Drift is evaluated for the
lenses of the decided proposal only, in one query for all of them, once the
decision has committed (`drift_evaluate`, in a transaction of its own): the
decision's transaction holds its proposal's lock, and the floors' locks, which every
decision of the same lenses would wait for, need not join it.
"""

from datetime import datetime

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from reviewapp.audit.models import AuditEntry
from reviewapp.audit.services import audit_record
from reviewapp.core.calibration import (
    DRIFTED,
    HumanTable,
    drift_transition,
    kappa_with_interval,
)
from reviewapp.review.models import Claim, ClaimMark, Decision, DecisionAudit, Judgement, Lens
from reviewapp.webhooks.events import webhook_record_lens_drift
from reviewapp.webhooks.models import Event

from . import events
from .models import HumanLabel, LensAgreementDay, LensFloor, LensLabel, PairErrorDay

MACHINE_APPROVED = {"reached_pass": True, "reached_fail": False}


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def labels_record(*, decision: Decision) -> None:
    """The reviewer's decision as the human label of the proposal and of each lens on it."""
    if decision.basis != Decision.Basis.REVIEWER or decision.escalation_id is None:
        return
    proposal = decision.proposal
    _label_write(
        decision=decision,
        decided_at=decision.created_at,
        approved=decision.outcome == Decision.Outcome.APPROVED,
        # An audit's verdict is a DecisionAudit (audit_labels_record), never a Decision.
        audit=False,
        machine_approved=MACHINE_APPROVED.get((proposal.tally or {}).get("outcome")),
    )


def audit_labels_record(*, audit: DecisionAudit) -> None:
    """A reviewer's audit verdict as the human label of an automatic decision.

    Called in the verdict's own transaction (on `audit_verdict_signed`). The
    machine's decision is what the reviewer checked, so it gives
    `machine_approved`; the verdict gives `approved`.
    """
    decision = audit.decision
    _label_write(
        decision=decision,
        decided_at=audit.created_at,
        approved=audit.outcome == Decision.Outcome.APPROVED,
        audit=True,
        machine_approved=decision.outcome == Decision.Outcome.APPROVED,
    )


def _label_write(
    *,
    decision: Decision,
    decided_at: datetime,
    approved: bool,
    audit: bool,
    machine_approved: bool | None,
) -> None:
    """The label of the proposal and of each lens on it and its day sums; the drift check
    follows the commit."""
    proposal = decision.proposal
    with transaction.atomic(savepoint=False):
        label = HumanLabel.objects.create(
            proposal=proposal,
            panel_id=proposal.panel_id,
            decision=decision,
            decided_at=decided_at,
            approved=approved,
            audit=audit,
            machine_approved=machine_approved,
        )
        verdicts = list(
            Judgement.objects.filter(proposal=proposal).values_list("lens_id", "verdict")
        )
        LensLabel.objects.bulk_create(
            LensLabel(
                label=label,
                lens_id=lens_id,
                proposal=proposal,
                panel_id=proposal.panel_id,
                decided_at=decided_at,
                passed=verdict == Judgement.Verdict.PASS,
                approved=approved,
                audit=audit,
            )
            for lens_id, verdict in verdicts
        )
        _add_to_days(
            [(lens_id, verdict == Judgement.Verdict.PASS) for lens_id, verdict in verdicts],
            day=decided_at.date(),
            audit=audit,
            approved=approved,
            # Marks are given with a reviewer's decision (stored before this, in its
            # transaction); the automatic decision an audit checks has none.
            claims={} if audit else _claims_marked(decision),
        )
        _add_to_pair_days(
            sorted((lens_id, verdict == Judgement.Verdict.PASS) for lens_id, verdict in verdicts),
            panel_id=proposal.panel_id,
            day=decided_at.date(),
            approved=approved,
        )
        # After commit: a crossing is announced once under the floors' own locks, and
        # the next label checks again if this process is lost before it runs.
        lens_ids = [lens_id for lens_id, _ in verdicts]
        transaction.on_commit(lambda: drift_evaluate(lens_ids=lens_ids), robust=True)


def _claims_marked(decision: Decision) -> dict[int, tuple[int, int]]:
    """Per lens, its claims the decision marked and those marked incorrect; one query."""
    rows = (
        ClaimMark.objects.filter(decision=decision)
        .values("claim__judgement__lens_id")
        .annotate(
            marked=Count("pk"), incorrect=Count("pk", filter=Q(mark=ClaimMark.Mark.INCORRECT))
        )
        .order_by()
    )
    return {r["claim__judgement__lens_id"]: (r["marked"], r["incorrect"]) for r in rows}


def _add_to_days(
    verdicts: list[tuple[int, bool]],
    *,
    day,
    audit: bool,
    approved: bool,
    claims: dict[int, tuple[int, int]],
) -> None:
    """Add one item per lens to its day's table; an upsert, so concurrent decisions both count."""
    if not verdicts:
        return
    table = _q(LensAgreementDay._meta.db_table)
    cells = ("pass_approved", "pass_rejected", "fail_approved", "fail_rejected")
    columns = (*cells, "claims_marked", "claims_incorrect")
    rows, params = [], []
    for lens_id, passed in verdicts:
        cell = ("pass" if passed else "fail") + ("_approved" if approved else "_rejected")
        rows.append("(%s, %s, %s, %s, %s, %s, %s, %s, %s)")
        params += [lens_id, day, audit, *(int(cell == c) for c in cells)]
        params += claims.get(lens_id, (0, 0))
    updates = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (lens_id, day, audit, {', '.join(columns)}) "
            f"VALUES {', '.join(rows)} "
            f"ON CONFLICT (lens_id, day, audit) DO UPDATE SET {updates}",
            params,
        )


def _add_to_pair_days(verdicts: list[tuple[int, bool]], *, panel_id: int, day, approved: bool):
    """Add this proposal to each pair of its lenses' day (lens ids ascending); one upsert."""
    pairs = [(a, b) for i, a in enumerate(verdicts) for b in verdicts[i + 1 :]]
    if not pairs:
        return
    table = _q(PairErrorDay._meta.db_table)
    columns = ("items", "first_wrong", "second_wrong", "both_wrong")
    rows, params = [], []
    for (first, first_passed), (second, second_passed) in pairs:
        first_wrong, second_wrong = first_passed != approved, second_passed != approved
        rows.append("(%s, %s, %s, %s, %s, %s, %s, %s)")
        params += [panel_id, first, second, day, 1, int(first_wrong), int(second_wrong)]
        params.append(int(first_wrong and second_wrong))
    updates = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (panel_id, first_id, second_id, day, {', '.join(columns)}) "
            f"VALUES {', '.join(rows)} "
            f"ON CONFLICT (panel_id, first_id, second_id, day) DO UPDATE SET {updates}",
            params,
        )


def rolling_tables(lens_windows: dict[int, int]) -> dict[int, HumanTable]:
    """Each lens's table over its last `window` labels, in one query for all of them."""
    if not lens_windows:
        return {}
    table = _q(LensLabel._meta.db_table)
    # A (lens, window) VALUES list joined in, so each lens keeps its own N.
    values = ", ".join("(%s, %s)" for _ in lens_windows)
    params = [v for item in lens_windows.items() for v in item]
    sql = f"""
        WITH wanted(lens_id, n) AS (VALUES {values}),
        ranked AS (
            SELECT l.lens_id, l.passed, l.approved,
                   ROW_NUMBER() OVER (PARTITION BY l.lens_id ORDER BY l.decided_at DESC, l.id DESC)
                       AS age,
                   w.n
            FROM {table} l JOIN wanted w ON w.lens_id = l.lens_id
        )
        SELECT lens_id,
               SUM(CASE WHEN passed AND approved THEN 1 ELSE 0 END),
               SUM(CASE WHEN passed AND NOT approved THEN 1 ELSE 0 END),
               SUM(CASE WHEN NOT passed AND approved THEN 1 ELSE 0 END),
               SUM(CASE WHEN NOT passed AND NOT approved THEN 1 ELSE 0 END)
        FROM ranked WHERE age <= n GROUP BY lens_id
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0]: HumanTable(*(int(v) for v in row[1:])) for row in cursor.fetchall()}


def drift_evaluate(*, lens_ids: list[int], now: datetime | None = None) -> list[tuple[int, str]]:
    """Compare each lens's rolling kappa with its floor; record and announce each crossing.

    The floors are locked first (in lens order, so two decisions never wait on
    each other crosswise): two decisions committing at once must not both see
    the lens cross and fire lens.drift twice.
    """
    if not lens_ids:
        return []
    now = now or timezone.now()
    with transaction.atomic(savepoint=False):
        # A lens nobody set a floor for gets the defaults; one statement for all.
        LensFloor.objects.bulk_create(
            [LensFloor(lens_id=lens_id) for lens_id in sorted(set(lens_ids))],
            ignore_conflicts=True,
        )
        floors = list(
            LensFloor.objects.select_for_update()
            .filter(lens_id__in=lens_ids)
            .select_related("lens")
            .order_by("lens_id")
        )
        tables = rolling_tables({f.lens_id: f.window for f in floors})
        crossings = []
        for floor in floors:
            table = tables.get(floor.lens_id, HumanTable())
            # Fewer labels than the window: the rolling value is not yet defined.
            kappa = kappa_with_interval(table).value if table.n >= floor.window else None
            change = drift_transition(drifting=floor.drifting, kappa=kappa, floor=floor.floor)
            floor.last_kappa, floor.evaluated_at = kappa, now
            if change:
                floor.drifting = change == DRIFTED
                floor.drifted_at = now if floor.drifting else None
                _announce(floor, change=change, kappa=kappa, table=table, now=now)
                crossings.append((floor.lens_id, change))
            floor.save(update_fields=["last_kappa", "evaluated_at", "drifting", "drifted_at"])
    return crossings


def _announce(floor: LensFloor, *, change: str, kappa: float, table: HumanTable, now) -> None:
    drifted = change == DRIFTED
    events.lens_drift_crossed.send(
        sender=LensFloor, floor=floor, drifted=drifted, kappa=kappa, adjudications=table.n
    )
    audit_record(
        actor="system",
        action=AuditEntry.Action.UPDATE,
        target_type="lens",
        target=floor.lens,
        changes={"drifting": {"old": not drifted, "new": drifted}},
        note=(
            f"Rolling kappa over the last {table.n} adjudications {kappa:.3f} "
            f"{'fell below' if drifted else 'is back at or above'} the floor {floor.floor}."
        ),
    )
    webhook_record_lens_drift(
        lens=floor.lens,
        event_type=Event.LENS_DRIFT if drifted else Event.LENS_RECOVERED,
        data={
            "kappa": kappa,
            "floor": floor.floor,
            "window": floor.window,
            "adjudications": table.n,
            "at": now.isoformat(),
        },
    )


def floor_update(*, lens: Lens, floor: float, window: int) -> LensFloor:
    """Set a lens's floor; the next adjudication is compared with it."""
    with transaction.atomic():
        row, _ = LensFloor.objects.select_for_update().get_or_create(lens=lens)
        row.floor, row.window = floor, window
        row.save(update_fields=["floor", "window"])
    return row


def labels_rebuild() -> int:
    """Every label and day table again from the reviewer decisions on escalations and the
    audit verdicts on automatic decisions; a few statements, one step each.

    For a backfill or after a bulk load. Drift state is left as it is.
    """
    t = _Tables()
    with transaction.atomic(), connection.cursor() as cursor:
        for table in (t.lens_label, t.day, t.pair_day, t.human):
            cursor.execute(f"DELETE FROM {table}")
        _rebuild_human_labels(cursor, t)
        _rebuild_lens_labels(cursor, t)
        _rebuild_days(cursor, t)
        _rebuild_pair_days(cursor, t)
        cursor.execute(f"SELECT COUNT(*) FROM {t.human}")
        return cursor.fetchone()[0]


class _Tables:
    """The tables `labels_rebuild` reads and writes, their names quoted for raw SQL."""

    def __init__(self) -> None:
        self.decision, self.audit = _q(Decision._meta.db_table), _q(DecisionAudit._meta.db_table)
        self.proposal, self.judgement = _q("review_proposal"), _q(Judgement._meta.db_table)
        self.mark, self.claim = _q(ClaimMark._meta.db_table), _q(Claim._meta.db_table)
        self.human, self.lens_label = _q(HumanLabel._meta.db_table), _q(LensLabel._meta.db_table)
        self.day, self.pair_day = (
            _q(LensAgreementDay._meta.db_table),
            _q(PairErrorDay._meta.db_table),
        )


def _rebuild_human_labels(cursor, t: _Tables) -> None:
    """A label per reviewer decision on an escalation (the panel's tally says what the
    machine would have done), then one per audit verdict (the audited automatic
    decision is the machine's)."""
    cursor.execute(
        f"""
        INSERT INTO {t.human} (proposal_id, panel_id, decision_id, decided_at, approved, audit,
                               machine_approved)
        SELECT d.proposal_id, p.panel_id, d.id, d.created_at, d.outcome = %s, %s,
               CASE {_json_text("p.tally", "outcome")} WHEN %s THEN %s WHEN %s THEN %s END
        FROM {t.decision} d JOIN {t.proposal} p ON p.id = d.proposal_id
        WHERE d.basis = %s AND d.escalation_id IS NOT NULL
        """,
        [
            Decision.Outcome.APPROVED,
            False,
            "reached_pass",
            True,
            "reached_fail",
            False,
            Decision.Basis.REVIEWER,
        ],
    )
    cursor.execute(
        f"""
        INSERT INTO {t.human} (proposal_id, panel_id, decision_id, decided_at, approved, audit,
                               machine_approved)
        SELECT d.proposal_id, p.panel_id, d.id, a.created_at, a.outcome = %s, %s,
               d.outcome = %s
        FROM {t.audit} a JOIN {t.decision} d ON d.id = a.decision_id
        JOIN {t.proposal} p ON p.id = d.proposal_id
        """,
        [Decision.Outcome.APPROVED, True, Decision.Outcome.APPROVED],
    )


def _rebuild_lens_labels(cursor, t: _Tables) -> None:
    """Each lens's verdict on each labelled proposal, beside the label."""
    cursor.execute(
        f"""
        INSERT INTO {t.lens_label} (label_id, lens_id, proposal_id, panel_id, decided_at,
                                    passed, approved, audit)
        SELECT h.id, j.lens_id, h.proposal_id, h.panel_id, h.decided_at, j.verdict = %s,
               h.approved, h.audit
        FROM {t.human} h JOIN {t.judgement} j ON j.proposal_id = h.proposal_id
        """,
        [Judgement.Verdict.PASS],
    )


def _rebuild_days(cursor, t: _Tables) -> None:
    """Per lens and UTC day, its 2×2 table against the labels and its claims marked."""
    day = _utc_day("l.decided_at")
    cursor.execute(
        f"""
        INSERT INTO {t.day} (lens_id, day, audit, pass_approved, pass_rejected,
                             fail_approved, fail_rejected, claims_marked, claims_incorrect)
        SELECT l.lens_id, {day}, l.audit,
               SUM(CASE WHEN l.passed AND l.approved THEN 1 ELSE 0 END),
               SUM(CASE WHEN l.passed AND NOT l.approved THEN 1 ELSE 0 END),
               SUM(CASE WHEN NOT l.passed AND l.approved THEN 1 ELSE 0 END),
               SUM(CASE WHEN NOT l.passed AND NOT l.approved THEN 1 ELSE 0 END),
               SUM(COALESCE(m.marked, 0)), SUM(COALESCE(m.incorrect, 0))
        FROM {t.lens_label} l JOIN {t.human} h ON h.id = l.label_id
        LEFT JOIN (
            SELECT cm.decision_id, j.lens_id, COUNT(*) AS marked,
                   SUM(CASE WHEN cm.mark = %s THEN 1 ELSE 0 END) AS incorrect
            FROM {t.mark} cm JOIN {t.claim} c ON c.id = cm.claim_id
            JOIN {t.judgement} j ON j.id = c.judgement_id
            GROUP BY cm.decision_id, j.lens_id
        ) m ON m.decision_id = h.decision_id AND m.lens_id = l.lens_id
        GROUP BY l.lens_id, {day}, l.audit
        """,
        [ClaimMark.Mark.INCORRECT],
    )


def _rebuild_pair_days(cursor, t: _Tables) -> None:
    """Per pair of lenses on a panel and UTC day, how often each and both were wrong."""
    day = _utc_day("a.decided_at")
    wrong_a, wrong_b = "(a.passed <> a.approved)", "(b.passed <> b.approved)"
    cursor.execute(
        f"""
        INSERT INTO {t.pair_day} (panel_id, first_id, second_id, day, items, first_wrong,
                                  second_wrong, both_wrong)
        SELECT a.panel_id, a.lens_id, b.lens_id, {day}, COUNT(*),
               SUM(CASE WHEN {wrong_a} THEN 1 ELSE 0 END),
               SUM(CASE WHEN {wrong_b} THEN 1 ELSE 0 END),
               SUM(CASE WHEN {wrong_a} AND {wrong_b} THEN 1 ELSE 0 END)
        FROM {t.lens_label} a
        JOIN {t.lens_label} b ON b.proposal_id = a.proposal_id AND b.lens_id > a.lens_id
        GROUP BY a.panel_id, a.lens_id, b.lens_id, {day}
        """
    )


def _json_text(column: str, key: str) -> str:
    """The text at `key` of a JSON column, read as JSON on either database."""
    if connection.vendor == "postgresql":
        return f"({column} ->> '{key}')"
    return f"json_extract({column}, '$.{key}')"


def _utc_day(column: str) -> str:
    # The day tables are by UTC date, like decision.created_at.date() in labels_record.
    if connection.vendor == "postgresql":
        return f"(({column}) AT TIME ZONE 'UTC')::date"
    return f"date({column})"
