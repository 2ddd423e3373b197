"""Querysets, inserts, saves and updates whose SQL is composed once per process, then
run again with new values.

Django composes a statement's SQL anew every time it runs it. For the statements
that every proposal makes (``reviewapp/review/statements.py``: its panel, its
token, its row, its lock, its inserts and saves) composing costs several times
what the database spends answering: about 0.45 ms of 0.55 ms for a proposal's
row. These keep what Django composed the first time, per database, and run it
with each call's values, building or reading the model instances as the ORM
does. The queryset or the model's fields stay the one definition: no SQL is
written by hand.

``CompiledQuery`` (``reading.py``) runs plain model querysets (no
``select_related``, annotations or ``values``) whose values are ints and
strings, or tuples of them (for ``__in``), each appearing once among the query's
parameters; anything else is refused when it is first composed. A tuple's length
is part of the SQL, so each length gets its own plan, up to ``MOST_PLANNED``.
``CompiledInsert`` (one instance, or several as ``bulk_create``), ``CompiledSave``
and ``CompiledUpdate`` (``writing.py``) write one model's fields; they check their
own preparation of the values against Django's when they compose, and leave to
Django an insert or save of a model whose saves have receivers.
"""

from .reading import CompiledQuery
from .writing import CompiledInsert, CompiledSave, CompiledUpdate

__all__ = ["CompiledInsert", "CompiledQuery", "CompiledSave", "CompiledUpdate"]
