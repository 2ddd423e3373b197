from types import SimpleNamespace

import pytest

from tests.support.module_rows import refuse_transactional


def a_request(fixtures, marker=None):
    node = SimpleNamespace(nodeid="t.py::test", get_closest_marker=lambda name: marker)
    return SimpleNamespace(fixturenames=fixtures, node=node)


def test_a_test_on_db_may_use_the_modules_rows():
    refuse_transactional(a_request(["db", "world"], pytest.mark.django_db().mark))


@pytest.mark.parametrize("fixture", ["transactional_db", "live_server"])
def test_a_transactional_fixture_is_refused_with_the_reason(fixture):
    with pytest.raises(AssertionError, match="cannot serve a transactional test"):
        refuse_transactional(a_request(["db", fixture]))


def test_a_transactional_django_db_mark_is_refused():
    with pytest.raises(AssertionError, match="t.py::test"):
        refuse_transactional(a_request(["world"], pytest.mark.django_db(transaction=True).mark))
