"""A queryset, an insert or a save composed once runs as the ORM would, one statement
a call (reviewapp/compiled_queries.py)."""

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, signals
from django.db.transaction import TransactionManagementError

from reviewapp.compiled_queries import CompiledInsert, CompiledQuery, CompiledSave
from reviewapp.review.models import Lens, Panel, Proposal
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

pytestmark = pytest.mark.django_db


def _counting(build):
    calls = []

    def counted(*values):
        calls.append(values)
        return build(*values)

    return CompiledQuery(counted), calls


def _fields(instance) -> dict:
    return {
        field.attname: getattr(instance, field.attname) for field in type(instance)._meta.fields
    }


def test_a_compiled_query_returns_the_rows_the_orm_returns_with_every_field_converted():
    lens = LensFactory()
    panel = PanelFactory(lenses=[lens])
    proposal = submit(panel, "The refund window is 30 days.", metadata={"agent": "a"})
    by_pk = CompiledQuery(lambda pk: Proposal.objects.filter(pk=pk)[:1])

    by_pk.first(proposal.pk)  # composes
    row = by_pk.first(proposal.pk)

    assert _fields(row) == _fields(Proposal.objects.get(pk=proposal.pk))
    assert row.panel_snapshot["lenses"][0]["name"] == lens.name  # JSON decoded
    assert row._state.adding is False and row._state.db == "default"


def test_a_compiled_query_is_composed_once_and_runs_one_statement_a_call(
    django_assert_num_queries,
):
    first, second = LensFactory(), LensFactory()
    named, builds = _counting(lambda name: Lens.objects.filter(name=name))

    assert [lens.pk for lens in named.all(first.name)] == [first.pk]
    with django_assert_num_queries(1):
        assert [lens.pk for lens in named.all(second.name)] == [second.pk]
    assert named.all("no such lens") == []
    assert len(builds) == 1 and named.composed


def test_each_length_of_a_tuple_value_gets_its_own_plan():
    lenses = [LensFactory() for _ in range(3)]
    by_pks, builds = _counting(lambda pks: Lens.objects.filter(pk__in=pks).order_by("pk"))

    two = by_pks.all((lenses[0].pk, lenses[2].pk))
    three = by_pks.all(tuple(lens.pk for lens in lenses))
    other_two = by_pks.all((lenses[1].pk, lenses[2].pk))

    assert [lens.pk for lens in two] == [lenses[0].pk, lenses[2].pk]
    assert [lens.pk for lens in three] == [lens.pk for lens in lenses]
    assert [lens.pk for lens in other_two] == [lenses[1].pk, lenses[2].pk]
    assert len(builds) == 2


def test_a_value_equal_to_a_constant_of_the_query_runs_through_the_orm_until_it_differs():
    panel = PanelFactory(name="seven", need=7)
    PanelFactory(name="other", need=2)
    named_with_need, builds = _counting(
        lambda name, need: Panel.objects.filter(name=name, need=need, version=1)
    )

    # need=1 equals the constant version=1: whose place is whose is ambiguous.
    assert named_with_need.all("seven", 1) == []
    assert not named_with_need.composed
    assert [p.pk for p in named_with_need.all("seven", 7)] == [panel.pk]
    assert named_with_need.composed
    assert named_with_need.all("other", 7) == []
    assert len(builds) == 2


def test_an_empty_tuple_matches_nothing_without_a_statement(django_assert_num_queries):
    by_pks = CompiledQuery(lambda pks: Lens.objects.filter(pk__in=pks))
    LensFactory()

    with django_assert_num_queries(0):
        assert by_pks.all(()) == []


@pytest.mark.parametrize(
    "build",
    [
        lambda pk: Proposal.objects.select_related("panel").filter(pk=pk),
        lambda pk: Proposal.objects.annotate(n=Count("judgements")).filter(pk=pk),
        lambda pk: Proposal.objects.filter(pk=pk).values("pk"),
    ],
    ids=["select_related", "annotate", "values"],
)
def test_anything_but_a_plain_model_queryset_is_refused(build):
    with pytest.raises(ValueError, match="plain model querysets"):
        CompiledQuery(build).all(1)


def test_values_other_than_ints_strings_and_tuples_of_them_are_refused():
    by_pk = CompiledQuery(lambda pk: Lens.objects.filter(pk=pk))

    with pytest.raises(TypeError, match="ints, strings and tuples"):
        by_pk.all(1.0)
    with pytest.raises(TypeError, match="ints, strings and tuples"):
        by_pk.all([1, 2])


@pytest.mark.django_db(transaction=True)  # outside a transaction, as a worker starts
def test_a_locking_query_takes_its_lock_only_inside_a_transaction_where_the_database_locks():
    lens = LensFactory()
    locked = CompiledQuery(lambda pk: Lens.objects.select_for_update().filter(pk=pk))
    with transaction.atomic():
        assert locked.first(lens.pk).pk == lens.pk

    if connection.features.has_select_for_update:
        with pytest.raises(TransactionManagementError):
            locked.first(lens.pk)
    else:  # SQLite: Django drops FOR UPDATE and runs it anywhere
        assert locked.first(lens.pk).pk == lens.pk


def _writable(model) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if not f.primary_key]


def _unsaved_copy(proposal: Proposal, **changes) -> Proposal:
    fields = {f.attname: getattr(proposal, f.attname) for f in Proposal._meta.concrete_fields}
    fields.update(id=None, external_ref=None, **changes)
    return Proposal(**fields)


def test_a_compiled_insert_stores_the_row_save_would_in_one_statement(django_assert_num_queries):
    template = submit(PanelFactory(lenses=[LensFactory()]), "The refund window is 30 days.")
    insert = CompiledInsert(Proposal, _writable(Proposal))
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
        CompiledInsert(Proposal, _writable(Proposal))(copy)
    finally:
        signals.post_save.disconnect(receiver, sender=Proposal)

    assert heard == [proposal.pk, copy.pk]


def test_a_compiled_insert_of_many_rows_stores_them_as_bulk_create_would_in_one_statement(
    django_assert_num_queries,
):
    insert = CompiledInsert(Lens, _writable(Lens))
    insert.many([LensFactory.build(), LensFactory.build()])  # composes for two rows
    lenses = [LensFactory.build(temperature=0.5), LensFactory.build(instructions="Be brief.")]

    with django_assert_num_queries(1):
        assert insert.many(lenses) is lenses

    stored = Lens.objects.in_bulk([lens.pk for lens in lenses])
    assert [_fields(stored[lens.pk]) for lens in lenses] == [_fields(lens) for lens in lenses]
    assert stored[lenses[1].pk].instructions == "Be brief."
    assert all(lens._state.adding is False for lens in lenses) and insert.composed


def test_each_number_of_rows_gets_its_own_insert_plan():
    insert = CompiledInsert(Lens, _writable(Lens))

    for count in (1, 3, 2, 3):
        lenses = insert.many([LensFactory.build() for _ in range(count)])
        assert Lens.objects.filter(pk__in=[lens.pk for lens in lenses]).count() == count

    assert sorted(count for _, count in insert._plans) == [1, 2, 3]
    assert insert.many([]) == []
