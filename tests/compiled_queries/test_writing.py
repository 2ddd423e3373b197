"""An insert, a save or an update composed once writes what the ORM would, one statement
a call (reviewapp/compiled_queries/writing.py)."""

import pytest
from django.db import DatabaseError
from django.db.models import signals

from reviewapp.compiled_queries import CompiledInsert, CompiledSave, CompiledUpdate
from reviewapp.review.models import Lens, Proposal
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:
    return {
        field.attname: getattr(instance, field.attname) for field in type(instance)._meta.fields
    }


def _unsaved_copy(proposal: Proposal, **changes) -> Proposal:
    fields = {f.attname: getattr(proposal, f.attname) for f in Proposal._meta.concrete_fields}
    fields.update(id=None, external_ref=None, **changes)
    return Proposal(**fields)


def test_a_compiled_insert_stores_the_row_save_would_in_one_statement(django_assert_num_queries):
    template = submit(PanelFactory(lenses=[LensFactory()]), "The refund window is 30 days.")
    insert = CompiledInsert(Proposal)
    insert(_unsaved_copy(template, title="composing"))
    row = _unsaved_copy(template, title="inserted", metadata={"n": 1}, tally=None)

    with django_assert_num_queries(1):
        insert(row)

    stored = Proposal.objects.get(pk=row.pk)
    assert _fields(stored) == _fields(row)
    assert stored.metadata == {"n": 1} and stored.tally is None and stored.created_at
    assert row._state.adding is False and insert.composed


def test_a_compiled_save_writes_only_its_fields_and_refuses_a_missing_row(
    django_assert_num_queries,
):
    proposal = submit(PanelFactory(lenses=[LensFactory()]), "The refund window is 30 days.")
    save = CompiledSave(Proposal, ["tally", "status", "updated_at"])
    save(proposal)
    proposal.tally, proposal.status, proposal.title = {"outcome": "x"}, "decided", "not saved"

    with django_assert_num_queries(1):
        save(proposal)

    stored = Proposal.objects.get(pk=proposal.pk)
    assert (stored.tally, stored.status, stored.updated_at) == (
        {"outcome": "x"},
        "decided",
        proposal.updated_at,
    )
    assert stored.title != "not saved" and save.composed
    Proposal.objects.filter(pk=proposal.pk).delete()
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        save(proposal)


def test_a_model_with_save_receivers_is_written_by_the_orm_so_they_hear_it():
    proposal = submit(PanelFactory(lenses=[LensFactory()]), "The refund window is 30 days.")
    heard = []

    def receiver(sender, instance, **kwargs):
        heard.append(instance.pk)

    signals.post_save.connect(receiver, sender=Proposal)
    try:
        CompiledSave(Proposal, ["status"])(proposal)
        copy = _unsaved_copy(proposal)
        CompiledInsert(Proposal)(copy)
    finally:
        signals.post_save.disconnect(receiver, sender=Proposal)

    assert heard == [proposal.pk, copy.pk]


def test_a_compiled_insert_of_many_rows_stores_them_as_bulk_create_would_in_one_statement(
    django_assert_num_queries,
):
    insert = CompiledInsert(Lens)
    insert.many([LensFactory.build(), LensFactory.build()])  # composes for two rows
    lenses = [LensFactory.build(temperature=0.5), LensFactory.build(instructions="Be brief.")]

    with django_assert_num_queries(1):
        assert insert.many(lenses) is lenses

    stored = Lens.objects.in_bulk([lens.pk for lens in lenses])
    assert [_fields(stored[lens.pk]) for lens in lenses] == [_fields(lens) for lens in lenses]
    assert stored[lenses[1].pk].instructions == "Be brief."
    assert all(lens._state.adding is False for lens in lenses) and insert.composed


def test_each_number_of_rows_gets_its_own_insert_plan():
    insert = CompiledInsert(Lens)

    for count in (1, 3, 2, 3):
        lenses = insert.many([LensFactory.build() for _ in range(count)])
        assert Lens.objects.filter(pk__in=[lens.pk for lens in lenses]).count() == count

    assert sorted(count for _, count in insert._plans) == [1, 2, 3]
    assert insert.many([]) == []


def test_a_compiled_update_changes_only_the_rows_its_queryset_matches_in_one_statement(
    django_assert_num_queries,
):
    queued = submit(PanelFactory(lenses=[LensFactory()]), "The refund window is 30 days.")
    other = submit(PanelFactory(lenses=[LensFactory()]), "Shipping takes five days.")
    Proposal.objects.filter(pk=other.pk).update(status="evaluating")
    begin = CompiledUpdate(
        Proposal,
        ["status", "final_step_error"],
        lambda pk: Proposal.objects.filter(pk=pk, status="queued"),
    )
    assert begin(other.pk, status="decided", final_step_error="composing") == 0

    with django_assert_num_queries(1):
        changed = begin(queued.pk, status="decided", final_step_error="")

    assert changed == 1 and begin.composed
    assert Proposal.objects.get(pk=queued.pk).status == "decided"
    assert Proposal.objects.get(pk=other.pk).status == "evaluating"  # not queued: untouched
    with pytest.raises(TypeError, match="sets"):
        begin(queued.pk, status="decided")


def test_more_rows_than_one_statement_carries_are_left_to_bulk_create_s_batches(monkeypatch):
    from django.db import connection

    insert = CompiledInsert(Lens)
    # A property on SQLite, a cached one on PostgreSQL (its value kept on the instance).
    monkeypatch.setattr(type(connection.features), "max_query_params", 2 * len(insert.fields))
    monkeypatch.delitem(vars(connection.features), "max_query_params", raising=False)

    lenses = insert.many([LensFactory.build() for _ in range(3)])

    assert Lens.objects.filter(pk__in=[lens.pk for lens in lenses]).count() == 3
    assert not insert.composed


def test_more_rows_than_the_planned_counts_are_left_to_bulk_create():
    from reviewapp.compiled_queries.reading import MOST_PLANNED

    insert = CompiledInsert(Lens)

    lenses = insert.many([LensFactory.build() for _ in range(MOST_PLANNED + 1)])

    assert Lens.objects.filter(pk__in=[lens.pk for lens in lenses]).count() == MOST_PLANNED + 1
    assert not insert.composed
