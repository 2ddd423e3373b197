"""Querysets, inserts and saves whose SQL is composed once per process, then run again
with new values.

Django composes a statement's SQL anew every time it runs it. For the few
statements that every proposal makes (its panel, its token, its row, its lock,
its insert and its final save) composing costs several times what the
database spends answering: about 0.45 ms of 0.55 ms for a proposal's row. These
keep what Django composed the first time, per database, and run it with each
call's values, building or reading the model instances as the ORM does. The
queryset or the model's fields stay the one definition: no SQL is written by
hand.

``CompiledQuery`` runs plain model querysets (no ``select_related``,
annotations or ``values``) whose values are ints and strings, or tuples of them
(for ``__in``), each appearing once among the query's parameters; anything else
is refused when it is first composed. A tuple's length is part of the SQL, so
each length gets its own plan. ``CompiledInsert`` and ``CompiledSave`` write one
instance's fields; they check their own preparation of the values against
Django's when they compose, and leave to Django a model whose saves have
receivers.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet
from django.db import DatabaseError, connections, router
from django.db.models import Model, QuerySet, signals
from django.db.models import sql as sql_queries
from django.db.models.query import ModelIterable
from django.db.transaction import TransactionManagementError

_VALUE_TYPES = (int, str)


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
        scalars, shape = _flattened(values)
        plan = self._plans.get(shape)
        if plan is None:
            queryset = self._build(*values)
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

    @property
    def composed(self) -> bool:
        """Whether a plan was kept (for tests: a query that never composes runs slowly)."""
        return bool(self._plans)


def _flattened(values: tuple) -> tuple[list, tuple]:
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
    slots = []
    for value in values:
        found = [i for i, param in enumerate(params) if _same_kind(param, value) and param == value]
        if len(found) != 1:
            return None
        slots.append(found[0])
    if len(set(slots)) != len(slots):
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


class _Writes:
    """An INSERT or UPDATE of one model's fields, composed once per database; each call
    prepares its values as Django's compiler does. If that preparation ever differs
    from Django's for the instance it was composed with, or the model has
    ``pre_save``/``post_save`` receivers (which these do not send), Django runs it."""

    def __init__(self, model: type[Model], fields: list[str]):
        self.model = model
        self.fields = [model._meta.get_field(name) for name in fields]
        self._plans: dict = {}  # SQL and how to lay out its parameters; None: Django runs it

    @property
    def composed(self) -> bool:
        return any(self._plans.values())

    def _orm(self) -> bool:
        return signals.pre_save.has_listeners(self.model) or signals.post_save.has_listeners(
            self.model
        )

    def _params(self, values: list, connection) -> list:
        return [
            field.get_db_prep_save(value, connection)
            for field, value in zip(self.fields, values, strict=True)
        ]


class CompiledInsert(_Writes):
    """``instance.save(force_insert=True)``, or ``bulk_create(instances)`` with ``many``,
    for a model with an automatic primary key, writing `fields` (the rest take their
    database defaults). A plan per number of rows: it is part of the SQL."""

    def __call__(self, instance: Model) -> None:
        connection = connections[router.db_for_write(self.model, instance=instance)]
        plan = None if self._orm() else self._plan([instance], connection)
        if plan is None:
            instance.save(force_insert=True)
        else:
            self._run(plan, [instance], connection)

    def many(self, instances: list[Model]) -> list[Model]:
        """As ``bulk_create``: no model signals; the instances get their primary keys."""
        if not instances:
            return instances
        connection = connections[router.db_for_write(self.model, instance=instances[0])]
        for instance in instances:
            instance._prepare_related_fields_for_save(operation_name="bulk_create")
        plan = self._plan(instances, connection)
        if plan is None:
            return self.model._base_manager.using(connection.alias).bulk_create(instances)
        self._run(plan, instances, connection)
        return instances

    def _plan(self, instances: list[Model], connection) -> tuple[str, bool] | None:
        if not connection.features.can_return_rows_from_bulk_insert:
            return None
        key = (connection.alias, len(instances))
        if key not in self._plans:
            self._plans[key] = self._compose(instances, connection)
        return self._plans[key]

    def _run(self, plan: tuple[str, bool], instances: list[Model], connection) -> None:
        sql, by_column = plan
        rows = [
            self._params([field.pre_save(instance, True) for field in self.fields], connection)
            for instance in instances
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, _laid_out(rows, by_column))
            pks = [row[0] for row in cursor.fetchall()]
        for instance, pk in zip(instances, pks, strict=True):
            instance.pk = pk
            instance._state.adding, instance._state.db = False, connection.alias

    def _compose(self, instances: list[Model], connection) -> tuple[str, bool] | None:
        query = sql_queries.InsertQuery(self.model)
        query.insert_values(self.fields, instances)
        compiler = query.get_compiler(connection=connection)
        compiler.returning_fields = [self.model._meta.pk]
        (sql, params), *more = compiler.as_sql()
        if more:
            return None
        # Django's pre_save has just run: the values are on the instances. Its
        # parameters are row after row, or (PostgreSQL's UNNEST) a list per column.
        rows = [
            self._params([getattr(instance, f.attname) for f in self.fields], connection)
            for instance in instances
        ]
        for by_column in (False, True):
            if _same_params(_laid_out(rows, by_column), list(params)):
                return sql, by_column
        return None


def _laid_out(rows: list[list], by_column: bool) -> list:
    if by_column:
        return [list(column) for column in zip(*rows, strict=True)]
    return [value for row in rows for value in row]


class CompiledSave(_Writes):
    """``instance.save(update_fields=fields)``, for the saves every proposal makes."""

    def __call__(self, instance: Model) -> None:
        connection = connections[router.db_for_write(self.model, instance=instance)]
        values = [field.pre_save(instance, False) for field in self.fields]
        if self._orm() or any(hasattr(v, "resolve_expression") for v in values):
            instance.save(update_fields=[field.name for field in self.fields])
            return
        sql = self._plans.get(connection.alias, "")
        if sql == "":
            sql = self._plans[connection.alias] = self._compose(instance, values, connection)
        if sql is None:
            instance.save(update_fields=[field.name for field in self.fields])
            return
        with connection.cursor() as cursor:
            cursor.execute(sql, [*self._params(values, connection), instance.pk])
            if cursor.rowcount != 1:
                # What Model.save says when an update_fields save finds no row.
                raise DatabaseError("Save with update_fields did not affect any rows.")

    def _compose(self, instance: Model, values: list, connection) -> str | None:
        query = sql_queries.UpdateQuery(self.model)
        query.add_update_fields(list(zip(self.fields, [None] * len(values), values, strict=True)))
        query.add_filter("pk", instance.pk)
        sql, params = query.get_compiler(connection=connection).as_sql()
        ours = [*self._params(values, connection), instance.pk]
        return sql if _same_params(ours, list(params)) else None


def _same_params(ours: list, theirs: list) -> bool:
    """The same parameters: equal, of one type (psycopg's JSON wrappers, by what they hold;
    lists, member by member)."""
    return len(ours) == len(theirs) and all(
        type(a) is type(b)
        and (
            _same_params(a, b)
            if isinstance(a, list)
            else a == b or getattr(a, "obj", a) == getattr(b, "obj", b)
        )
        for a, b in zip(ours, theirs, strict=True)
    )
