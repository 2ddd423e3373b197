"""HTML pages during a database outage: a 503 that says what to do, not Django's 500."""

import pytest
from django.db import connection

from tests.support.ports import refused_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def database_down():
    """Point the live connection at a database that cannot be reached, for real.

    Yields the function that brings it back (also called at teardown).
    """
    saved = dict(connection.settings_dict)

    def bring_back() -> None:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)

    connection.close()
    if connection.vendor == "postgresql":
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(refused_port()))
    else:
        connection.settings_dict["NAME"] = "/nonexistent-directory/reviewapp.sqlite3"
    yield bring_back
    bring_back()


def test_page_answers_503_with_retry_after_when_the_database_is_down(
    reviewer_client, database_down
):
    response = reviewer_client.get("/")

    assert response.status_code == 503
    assert response["Retry-After"] == "5"


def test_outage_page_tells_the_reviewer_to_reload_and_check_before_acting_again(
    reviewer_client, database_down
):
    response = reviewer_client.get("/")

    text = response.content.decode()
    assert "Briefly unavailable" in text
    assert "reload the page in a few seconds and check before you act again" in text


def test_post_during_an_outage_answers_503(reviewer_client, database_down):
    # Django's test client skips CSRF checks, so the POST reaches the view.
    response = reviewer_client.post("/escalations/1/claim")

    assert response.status_code == 503


def test_pages_work_again_once_the_database_is_back(reviewer_client, database_down):
    assert reviewer_client.get("/").status_code == 503
    end_outage = database_down

    end_outage()

    assert reviewer_client.get("/").status_code == 200
