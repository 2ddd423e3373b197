import pytest
from django.db import connection, connections, transaction

from reviewapp.review.final_notice import CHANNEL, proposal_final_notify

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="NOTIFY is PostgreSQL's; SQLite sends nothing"
    ),
]


@pytest.fixture
def listener():
    """A connection of its own, as the MCP watch's, LISTENing on the channel."""
    listening = connections.create_connection("default")
    listening.ensure_connection()
    listening.connection.execute(f'LISTEN "{CHANNEL}"')
    yield listening.connection
    listening.close()


def test_the_notice_is_delivered_at_commit_not_before(listener):
    with transaction.atomic():
        proposal_final_notify(proposal_id=7)
        before_commit = list(listener.notifies(timeout=0.2, stop_after=1))

    assert before_commit == []
    assert [n.payload for n in listener.notifies(timeout=5, stop_after=1)] == ["7"]


def test_no_notice_is_delivered_when_the_transaction_rolls_back(listener):
    with pytest.raises(RuntimeError), transaction.atomic():
        proposal_final_notify(proposal_id=7)
        raise RuntimeError("rolled back")

    assert list(listener.notifies(timeout=0.5, stop_after=1)) == []
