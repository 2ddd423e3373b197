"""The statements every proposal makes, composed once per process
(``reviewapp/compiled_queries/``): on the pipeline's path, composing their SQL
cost more than running it."""

from reviewapp.compiled_queries import CompiledInsert, CompiledQuery, CompiledSave, CompiledUpdate

from .models import CheckerConfig, Claim, Evidence, Judgement, Lens, LensFailure, Panel, Proposal

# What the answer path reads of the locked proposal: the lock is the point, not the row.
COUNTER_FIELDS = ("id", "status", "lenses_asked", "lenses_answered")
# What the final step changes on the proposal.
FINAL_FIELDS = ["tally", "finalized_at", "status", "lenses_answered", "updated_at"]

proposal_row = CompiledQuery(lambda pk: Proposal.objects.filter(pk=pk).order_by()[:1])
proposal_counter_locked = CompiledQuery(
    lambda pk: Proposal.objects.select_for_update().only(*COUNTER_FIELDS).filter(pk=pk)
)
active_panel_named = CompiledQuery(
    lambda name: Panel.objects.filter(name=name, active=True).order_by()[:1]
)
# Lenses and checkers by name, as in_bulk returned them.
lenses_by_pk = CompiledQuery(lambda pks: Lens.objects.filter(pk__in=pks))
checkers_by_pk = CompiledQuery(lambda pks: CheckerConfig.objects.filter(pk__in=pks))

proposal_insert = CompiledInsert(Proposal)
judgement_insert = CompiledInsert(Judgement)
lens_failure_insert = CompiledInsert(LensFailure)
claim_insert = CompiledInsert(Claim)
evidence_insert = CompiledInsert(Evidence)
proposal_count_save = CompiledSave(Proposal, ["lenses_answered", "updated_at"])
# A queued proposal's move to evaluating; conditional, as lenses may start in parallel.
proposal_begin = CompiledUpdate(
    Proposal,
    ["status", "evaluation_started_at", "updated_at"],
    lambda pk: Proposal.objects.filter(pk=pk, status=Proposal.Status.QUEUED),
)
proposal_final_save = CompiledSave(Proposal, FINAL_FIELDS)
