"""A queryset composed once runs as the ORM would, one statement a call
(reviewapp/compiled_queries/reading.py)."""

import pytest
from django.db import connection, transaction
from django.db.models import Count
from django.db.transaction import TransactionManagementError

from reviewapp.compiled_queries import CompiledQuery
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


def test_a_tuple_longer_than_the_planned_lengths_runs_through_the_orm_and_keeps_no_plan():
    from reviewapp.compiled_queries.reading import MOST_PLANNED

    lenses = [LensFactory() for _ in range(MOST_PLANNED + 1)]
    by_pks = CompiledQuery(lambda pks: Lens.objects.filter(pk__in=pks))

    assert len(by_pks.all(tuple(lens.pk for lens in lenses))) == MOST_PLANNED + 1
    assert not by_pks.composed


def test_in_bulk_maps_each_primary_key_to_its_row_as_the_orm_does():
    lenses = [LensFactory() for _ in range(3)]
    by_pks = CompiledQuery(lambda pks: Lens.objects.filter(pk__in=pks))
    wanted = [lenses[2].pk, lenses[0].pk]

    found = by_pks.in_bulk(iter(wanted))

    assert found.keys() == Lens.objects.in_bulk(wanted).keys() == set(wanted)
    assert found[lenses[2].pk].name == lenses[2].name
