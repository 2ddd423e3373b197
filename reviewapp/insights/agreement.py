"""How far lenses agree with each other, and reviewers with the lenses, aggregated in the database.

Cohen's kappa per pair of lenses and Fleiss' kappa per panel are computed in
reviewapp.core.agreement from sums one query each reads (judgements joined to
themselves, in SQL written for both SQLite and PostgreSQL).
"""

from dataclasses import dataclass

from django.db import connection
from django.db.models import Count

from reviewapp.core.agreement import FleissSums, PairTable, cohen_kappa, fleiss_kappa
from reviewapp.review.models import Judgement, Lens, Panel, Proposal
from reviewapp.review.proposal_sets.drilldown import (
    LARGER_SIDE,
    LARGER_SIDE_DECIDED,
    with_tally_votes,
)
from reviewapp.review.proposal_sets.scope import Scope

PASS = Judgement.Verdict.PASS
FAIL = Judgement.Verdict.FAIL


@dataclass
class PairAgreement:
    panel_id: int
    panel: str
    first: str
    second: str
    table: PairTable
    kappa: float | None
    first_id: int = 0
    second_id: int = 0

    @property
    def items(self) -> int:
        return self.table.items


@dataclass
class PanelAgreement:
    panel_id: int
    panel: str
    sums: FleissSums
    kappa: float | None

    @property
    def items(self) -> int:
        return self.sums.items

    @property
    def raters(self) -> int:
        return self.sums.raters


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _in_scope_sql(scope: Scope) -> tuple[str, tuple]:
    """The ids of in-scope proposals as a subquery, compiled by the ORM for this backend."""
    sql, params = scope.proposals().order_by().values("pk").query.sql_with_params()
    return sql, tuple(params)


def pairwise_agreement(scope: Scope) -> list[PairAgreement]:
    """Cohen's kappa for every pair of lenses that judged the same proposals of a panel.

    One query: judgements joined to themselves on the proposal (first lens id
    below the second, so each pair once), contingency counts summed per
    (panel, pair).
    """
    in_scope, scope_params = _in_scope_sql(scope)
    j, p, lens, panel = (
        _q(Judgement._meta.db_table),
        _q(Proposal._meta.db_table),
        _q(Lens._meta.db_table),
        _q(Panel._meta.db_table),
    )
    cell = "SUM(CASE WHEN a.verdict = %s AND b.verdict = %s THEN 1 ELSE 0 END)"
    sql = f"""
        SELECT pr.panel_id, pn.name, la.name, lb.name, a.lens_id, b.lens_id,
               {cell}, {cell}, {cell}, {cell}
        FROM {j} a
        JOIN {j} b ON b.proposal_id = a.proposal_id AND b.lens_id > a.lens_id
        JOIN {p} pr ON pr.id = a.proposal_id
        JOIN {panel} pn ON pn.id = pr.panel_id
        JOIN {lens} la ON la.id = a.lens_id
        JOIN {lens} lb ON lb.id = b.lens_id
        WHERE a.proposal_id IN ({in_scope})
        GROUP BY pr.panel_id, pn.name, a.lens_id, la.name, b.lens_id, lb.name
        ORDER BY pn.name, la.name, lb.name
    """
    params = (PASS, PASS, PASS, FAIL, FAIL, PASS, FAIL, FAIL, *scope_params)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    pairs = []
    for panel_id, panel_name, first, second, first_id, second_id, pp, pf, fp, ff in rows:
        table = PairTable(int(pp), int(pf), int(fp), int(ff))
        pairs.append(
            PairAgreement(
                panel_id=panel_id,
                panel=panel_name,
                first=first,
                second=second,
                table=table,
                kappa=cohen_kappa(table),
                first_id=first_id,
                second_id=second_id,
            )
        )
    return pairs


def panel_agreement(scope: Scope) -> list[PanelAgreement]:
    """Fleiss' kappa per panel over the proposals every one of its lenses judged.

    One query: per proposal the pass and fail counts (inner), then per panel
    the sums Fleiss' kappa needs (outer), over proposals whose judgement count
    equals the number of lenses the panel asked. A panel whose lens count
    changed over time gets one row per lens count (the raters must be equal).
    """
    in_scope, scope_params = _in_scope_sql(scope)
    j, p, panel = (
        _q(Judgement._meta.db_table),
        _q(Proposal._meta.db_table),
        _q(Panel._meta.db_table),
    )
    sql = f"""
        SELECT t.panel_id, pn.name, t.raters,
               COUNT(*), SUM(t.passed * t.passed + t.failed * t.failed),
               SUM(t.passed), SUM(t.failed)
        FROM (
            SELECT j.proposal_id, pr.panel_id AS panel_id, pr.lenses_asked AS raters,
                   SUM(CASE WHEN j.verdict = %s THEN 1 ELSE 0 END) AS passed,
                   SUM(CASE WHEN j.verdict = %s THEN 1 ELSE 0 END) AS failed,
                   COUNT(*) AS judged
            FROM {j} j
            JOIN {p} pr ON pr.id = j.proposal_id
            WHERE j.proposal_id IN ({in_scope})
            GROUP BY j.proposal_id, pr.panel_id, pr.lenses_asked
        ) t
        JOIN {panel} pn ON pn.id = t.panel_id
        WHERE t.judged = t.raters AND t.raters >= 2
        GROUP BY t.panel_id, pn.name, t.raters
        ORDER BY pn.name, t.raters
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, (PASS, FAIL, *scope_params))
        rows = cursor.fetchall()
    panels = []
    for panel_id, name, raters, items, squares, passed, failed in rows:
        sums = FleissSums(
            items=int(items),
            raters=int(raters),
            sum_squares=int(squares),
            category_totals=(int(passed), int(failed)),
        )
        panels.append(
            PanelAgreement(panel_id=panel_id, panel=name, sums=sums, kappa=fleiss_kappa(sums))
        )
    return panels


@dataclass
class LargerSide:
    """No-quorum proposals a reviewer decided, against the side with more lens votes.

    Information only: it never decides anything (docs/product.md: a no-quorum panel
    is never resolved automatically).
    """

    decided: int
    agreed: int
    disagreed: int
    ties: int

    @property
    def compared(self) -> int:
        return self.agreed + self.disagreed

    @property
    def agreement_rate(self) -> float | None:
        return self.agreed / self.compared if self.compared else None


def human_vs_larger_side(scope: Scope) -> LargerSide:
    """One aggregate over no-quorum proposals a reviewer decided."""
    counts = with_tally_votes(scope.proposals().filter(LARGER_SIDE_DECIDED)).aggregate(
        **{key: Count("pk", filter=q) for key, q in LARGER_SIDE.items()}
    )
    return LargerSide(**counts)
