"""A personal token stays dead once its person lost the right to review, however that
happened: the database records each loss of access (reviewapp/review/access_loss.py), and a
token is live only if it was issued after its holder's last loss."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, transaction

from reviewapp.review.models import AccessLoss, ApiClient
from reviewapp.review.services.clients import api_client_create
from tests.api.conftest import Api
from tests.factories import ReviewerFactory

pytestmark = pytest.mark.django_db

User = get_user_model()


def personal(user, name="laptop") -> tuple[ApiClient, Api]:
    client, token = api_client_create(name=f"{user.username}-{name}", scopes=["review"], user=user)
    return client, Api(token)


def works(api: Api) -> bool:
    status = api.get("/api/escalations").status_code
    assert status in (200, 401), status
    return status == 200


def raw(sql, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.fixture
def ann():
    return ReviewerFactory(username="ann")


def test_a_bulk_deactivation_and_reactivation_leaves_the_token_dead(ann):
    _, api = personal(ann)
    User.objects.filter(pk=ann.pk).update(is_active=False)
    User.objects.filter(pk=ann.pk).update(is_active=True)

    assert not works(api)


def test_a_membership_row_deleted_in_sql_and_put_back_leaves_the_token_dead(ann):
    _, api = personal(ann)
    reviewers = Group.objects.get(name="reviewers")
    raw("DELETE FROM auth_user_groups WHERE user_id = %s", [ann.pk])
    raw("INSERT INTO auth_user_groups (user_id, group_id) VALUES (%s, %s)", [ann.pk, reviewers.pk])

    assert not works(api)


def test_the_reviewers_group_deleted_and_re_created_leaves_the_token_dead(ann):
    _, api = personal(ann)
    Group.objects.filter(name="reviewers").delete()
    ann.groups.add(Group.objects.create(name="reviewers"))

    assert not works(api)


def test_the_reviewers_group_renamed_away_and_back_leaves_the_token_dead(ann):
    _, api = personal(ann)
    Group.objects.filter(name="reviewers").update(name="former-reviewers")
    Group.objects.filter(name="former-reviewers").update(name="reviewers")

    assert not works(api)


def test_a_superuser_demoted_in_bulk_and_promoted_again_leaves_the_token_dead():
    boss = User.objects.create_superuser("boss", "boss@example.com", "x")
    _, api = personal(boss)
    User.objects.filter(pk=boss.pk).update(is_superuser=False)
    User.objects.filter(pk=boss.pk).update(is_superuser=True)

    assert not works(api)


def test_un_revoking_the_token_in_sql_does_not_bring_it_back(ann):
    client, api = personal(ann)
    User.objects.filter(pk=ann.pk).update(is_active=False)
    User.objects.filter(pk=ann.pk).update(is_active=True)
    ApiClient.objects.filter(pk=client.pk).update(revoked_at=None)

    assert not works(api)


def test_every_loss_is_recorded_and_the_tokens_shown_revoked(ann):
    client, _ = personal(ann)
    User.objects.filter(pk=ann.pk).update(is_active=False)

    loss = AccessLoss.objects.get(user_id=ann.pk)
    assert "deactivated" in loss.reason
    client.refresh_from_db()
    assert client.revoked_at is not None


def test_the_record_of_losses_cannot_be_edited_or_deleted(ann):
    personal(ann)
    User.objects.filter(pk=ann.pk).update(is_active=False)
    loss = AccessLoss.objects.get()

    with pytest.raises(IntegrityError, match="refused"):
        raw("UPDATE review_accessloss SET user_id = 0 WHERE id = %s", [loss.pk])
    with pytest.raises(IntegrityError, match="refused"):
        raw("DELETE FROM review_accessloss WHERE id = %s", [loss.pk])


def test_a_token_issued_after_access_came_back_works(ann):
    personal(ann)
    User.objects.filter(pk=ann.pk).update(is_active=False)
    User.objects.filter(pk=ann.pk).update(is_active=True)

    _, fresh = personal(ann, "desk")

    assert works(fresh)


def test_leaving_another_group_in_sql_costs_no_token(ann):
    _, api = personal(ann)
    ann.groups.add(Group.objects.create(name="night-shift"))
    raw(
        "DELETE FROM auth_user_groups WHERE user_id = %s AND group_id = %s",
        [ann.pk, Group.objects.get(name="night-shift").pk],
    )

    assert works(api)
    assert not AccessLoss.objects.exists()


def test_a_dead_personal_token_is_refused_over_mcp_too(ann):
    from reviewapp.review.services.clients import api_clients_for_tokens

    _, token = api_client_create(name="ann-mcp", scopes=["review"], user=ann)
    User.objects.filter(pk=ann.pk).update(is_active=False)
    User.objects.filter(pk=ann.pk).update(is_active=True)

    assert api_clients_for_tokens([token]) == {token: None}
