"""Rows that every test of a module reads, written once for the module.

Building them for each test is most of what a route-by-route test costs (the
access matrix builds a decided proposal, an escalation, a replay… for each of
some 700 tests). Here they are written in a transaction that stays open while
the module's tests run: each test's own transaction (pytest-django's `db`)
nests in it as a savepoint, so whatever a test writes is rolled back to these
rows, and the rows themselves are rolled back after the module.

Only for tests that use `db`: a transactional test (`transactional_db`,
`live_server`) would commit around them or flush them.
"""

from contextlib import contextmanager

from django.db import transaction


@contextmanager
def written_for_the_module(django_db_blocker):
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)


def refuse_transactional(request) -> None:
    """Fail a test that would run transactionally beside the module's open transaction."""
    transactional = {"transactional_db", "live_server"} & set(request.fixturenames)
    marker = request.node.get_closest_marker("django_db")
    if transactional or (marker and marker.kwargs.get("transaction")):
        raise AssertionError(
            f"{request.node.nodeid}: rows written for the module cannot serve a "
            "transactional test; build its own"
        )
