"""Bulk loads written in SQL whose column lists come from the models.

A benchmark that loads a million rows with `INSERT … SELECT` names the columns it
writes; a column a later migration adds (NOT NULL, with a default in the model but
none in the database) would then make the load fail, or worse, load rows the app
never writes. `insert_select` lists every column of the model's table: those the
caller gives take its SQL expressions, every other one the model's default (as the
ORM would write it), and a NOT NULL column with no default is refused by name
before anything runs, so the load says what to add.
"""

from __future__ import annotations


def insert_select(model, values: dict[str, str], source: str) -> str:
    """`INSERT INTO <model's table> (<every column>) SELECT … <source>`.

    `values` maps column names to SQL expressions over `source` (its FROM, JOIN,
    WHERE and ORDER BY); the statement is run with pyformat parameters, so a literal
    `%` in them is written `%%`. An auto primary key left out is numbered by the
    database; `auto_now`/`auto_now_add` columns left out take `now()`.
    """
    from django.db import connection

    connection.ensure_connection()  # `_default` quotes literals on it
    fields = {field.column: field for field in model._meta.local_concrete_fields}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{model._meta.db_table} has no column {', '.join(unknown)}")
    columns, expressions = [], []
    for column, field in fields.items():
        if column in values:
            expression = values[column]
        elif field.primary_key and field.get_internal_type().endswith("AutoField"):
            continue
        else:
            expression = _default(model, field, connection)
        columns.append(connection.ops.quote_name(column))
        expressions.append(expression)
    return (
        f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({', '.join(columns)})"
        f"\nSELECT {', '.join(expressions)}\n{source}"
    )


def _default(model, field, connection) -> str:
    """The model's default for `field` as a SQL literal of the column's type."""
    from psycopg import sql

    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return "now()"
    value = field.get_default()  # "" for a text column without one, as the ORM writes
    if value is None:
        if not field.null:
            raise ValueError(
                f"{model._meta.db_table}.{field.column} is NOT NULL and has no default: "
                "say what the bulk load writes there"
            )
        return f"NULL::{field.db_type(connection)}"
    prepared = field.get_db_prep_value(value, connection, prepared=False)
    literal = sql.Literal(prepared).as_string(connection.connection)
    return f"{literal.replace('%', '%%')}::{field.db_type(connection)}"
