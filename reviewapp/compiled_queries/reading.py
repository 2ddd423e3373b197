"""``CompiledQuery``: a plain model queryset composed once, run with each call's values."""

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable
from django.db.transaction import TransactionManagementError

_VALUE_TYPES = (int, str)
# Plans are kept per length of a tuple (or per number of rows inserted): past this
# the ORM runs the statement, so values chosen to vary without end cannot grow
# a process's plans without end.
MOST_PLANNED = 64


@dataclass(frozen=True)
class _Plan:
    alias: str
    sql: str
    params: tuple
    slots: tuple[int, ...]  # where each call's values go among the params
    model: type[Model]
    fields: list[str]
    converters: list[tuple[int, list, object]]  # (position, converters, expression)
    for_update: bool

    def run(self, values: list) -> list[Model]:
        connection = connections[self.alias]
        if self.for_update and connection.get_autocommit():
            # What Django says when it composes such a query outside a transaction.
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        params = list(self.params)
        for slot, value in zip(self.slots, values, strict=True):
            # In the parameter's own type: on PostgreSQL an integer column's
            # parameter is psycopg's Int4 or Int8, which says how to bind it.
            params[slot] = type(params[slot])(value)
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        if self.converters:
            rows = [self._converted(row, connection) for row in rows]
        return [self.model.from_db(self.alias, self.fields, row) for row in rows]

    def _converted(self, row: tuple, connection) -> list:
        # As SQLCompiler.apply_converters, with this thread's connection.
        row = list(row)
        for position, converters, expression in self.converters:
            for converter in converters:
                row[position] = converter(row[position], expression, connection)
        return row


class CompiledQuery:
    """``build(*values)`` returns the queryset; calling this runs it, composed once.

    >>> proposal_row = CompiledQuery(lambda pk: Proposal.objects.filter(pk=pk)[:1])
    >>> proposal_row.first(41)
    """

    def __init__(self, build: Callable[..., QuerySet]):
        self._build = build
        # By the shape of the values (a tuple's length changes the SQL). One
        # database: the queryset's, as Django's router named it when composed.
        self._plans: dict[tuple, _Plan] = {}

    def all(self, *values) -> list[Model]:
        scalars, shape = flattened(values)
        plan = self._plans.get(shape)
        if plan is None:
            queryset = self._build(*values)
            if any(length and length > MOST_PLANNED for length in shape):
                return list(queryset)
            plan = _compose(queryset, scalars)
            if plan is None:
                # A value equal to another parameter of the query (a constant, or
                # another value), or a query that matches nothing whatever the
                # values (an empty tuple): the ORM runs it this time.
                return list(queryset)
            self._plans[shape] = plan
        return plan.run(scalars)

    def first(self, *values) -> Model | None:
        rows = self.all(*values)
        return rows[0] if rows else None

    def in_bulk(self, pks) -> dict:
        """As ``Model.objects.in_bulk(pks)``, for a query whose one value is the tuple of
        primary keys (``filter(pk__in=…)``)."""
        return {row.pk: row for row in self.all(tuple(pks))}

    @property
    def composed(self) -> bool:
        """Whether a plan was kept (for tests: a query that never composes runs slowly)."""
        return bool(self._plans)


def flattened(values: tuple) -> tuple[list, tuple]:
    """The values one by one (a tuple's members in its place), and their shape: None for
    a scalar, its length for a tuple."""
    scalars, shape = [], []
    for value in values:
        members = value if type(value) is tuple else (value,)
        if not all(type(member) in _VALUE_TYPES for member in members):
            raise TypeError(f"CompiledQuery takes ints, strings and tuples of them, not {value!r}")
        scalars.extend(members)
        shape.append(len(value) if type(value) is tuple else None)
    return scalars, tuple(shape)


def _compose(queryset: QuerySet, values: list) -> _Plan | None:
    compiler = queryset.query.get_compiler(using=queryset.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return None
    klass_info = compiler.klass_info
    if (
        klass_info is None
        or klass_info.get("related_klass_infos")
        or compiler.annotation_col_map
        or queryset._known_related_objects
        or queryset._prefetch_related_lookups
        or queryset._iterable_class is not ModelIterable
    ):
        raise ValueError(f"CompiledQuery runs plain model querysets only: {queryset.query}")
    slots = value_slots(params, values)
    if slots is None:
        return None
    select = compiler.select
    start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    if (start, end) != (0, len(select)):
        raise ValueError(f"CompiledQuery runs plain model querysets only: {queryset.query}")
    return _Plan(
        alias=queryset.db,
        sql=sql,
        params=tuple(params),
        slots=tuple(slots),
        model=klass_info["model"],
        fields=[column[0].target.attname for column in select],
        converters=[
            (position, converters, expression)
            for position, (converters, expression) in compiler.get_converters(
                [column[0] for column in select]
            ).items()
        ],
        # Django refuses FOR UPDATE outside a transaction where the database has it.
        for_update=queryset.query.select_for_update
        and compiler.connection.features.has_select_for_update,
    )


def _same_kind(param, value) -> bool:
    # A parameter is the value's type or a subclass of it (psycopg's Int4), never a bool.
    return isinstance(param, type(value)) and not isinstance(param, bool)


def value_slots(params, values: list) -> tuple[int, ...] | None:
    """Where each value sits among the parameters; None if any could sit in two places."""
    slots = []
    for value in values:
        found = [i for i, param in enumerate(params) if _same_kind(param, value) and param == value]
        if len(found) != 1:
            return None
        slots.append(found[0])
    return tuple(slots) if len(set(slots)) == len(slots) else None
