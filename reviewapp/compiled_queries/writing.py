"""``CompiledInsert``, ``CompiledSave`` and ``CompiledUpdate``: one model's writes
composed once, their values prepared as Django's compiler prepares them."""

from collections.abc import Callable

from django.core.exceptions import EmptyResultSet
from django.db import DatabaseError, connections, router
from django.db.models import Model, QuerySet, signals
from django.db.models import sql as sql_queries

from .reading import MOST_PLANNED, flattened, value_slots


class _Writes:
    """An INSERT or UPDATE of one model's fields, composed once per database; each call
    prepares its values as Django's compiler does. If that preparation differs from
    Django's for the values it was composed with, Django runs it. These send no model
    signals: an insert of one instance or a save, which in Django would, is left to
    Django while the model has ``pre_save`` or ``post_save`` receivers."""

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
    database defaults; every field Django would write, when not given). A plan per
    number of rows (it is part of the SQL), up to ``MOST_PLANNED`` rows; more go to
    ``bulk_create``."""

    def __init__(self, model: type[Model], fields: list[str] | None = None):
        if fields is None:
            fields = [
                f.name for f in model._meta.concrete_fields if not (f.primary_key or f.generated)
            ]
        super().__init__(model, fields)

    def __call__(self, instance: Model) -> None:
        connection = connections[router.db_for_write(self.model, instance=instance)]
        instance._prepare_related_fields_for_save(operation_name="save")
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
        # More rows than one statement may carry parameters for: Django batches them.
        fits = len(instances) <= MOST_PLANNED and connection.ops.bulk_batch_size(
            self.fields, instances
        ) >= len(instances)
        plan = self._plan(instances, connection) if fits else None
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


class CompiledUpdate(_Writes):
    """``build(*where).update(**changes)`` for `fields`, composed once per shape of the
    `where` values (as ``CompiledQuery``); returns the number of rows it changed."""

    def __init__(self, model: type[Model], fields: list[str], build: Callable[..., QuerySet]):
        super().__init__(model, fields)
        self._build = build

    def __call__(self, *where, **changes) -> int:
        scalars, shape = flattened(where)
        if set(changes) != {field.name for field in self.fields}:
            raise TypeError(f"CompiledUpdate sets {[f.name for f in self.fields]}, not {changes}")
        values = [changes[field.name] for field in self.fields]
        connection = connections[router.db_for_write(self.model)]
        if any(hasattr(value, "resolve_expression") for value in values) or any(
            length and length > MOST_PLANNED for length in shape
        ):
            return self._build(*where).update(**changes)
        key = (connection.alias, shape)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._compose(where, scalars, values, connection)
            if plan is None:
                # Ambiguous this time (see CompiledQuery), or prepared unlike Django.
                return self._build(*where).update(**changes)
            self._plans[key] = plan
        sql, where_params, slots = plan
        where_params = list(where_params)
        for slot, value in zip(slots, scalars, strict=True):
            where_params[slot] = type(where_params[slot])(value)
        with connection.cursor() as cursor:
            cursor.execute(sql, [*self._params(values, connection), *where_params])
            return cursor.rowcount

    def _compose(self, where: tuple, scalars: list, values: list, connection):
        query = self._build(*where).query.chain(sql_queries.UpdateQuery)
        query.add_update_fields(list(zip(self.fields, [None] * len(values), values, strict=True)))
        try:
            sql, params = query.get_compiler(connection=connection).as_sql()
        except EmptyResultSet:
            return None
        params = list(params)
        sets, where_params = params[: len(values)], params[len(values) :]
        if not _same_params(self._params(values, connection), sets):
            return None
        slots = value_slots(where_params, scalars)
        return None if slots is None else (sql, tuple(where_params), slots)


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
