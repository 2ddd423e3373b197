"""Reviewers hear about work: who, when, how (real SMTP and a chat receiver on loopback),
and nothing blind review hides."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from reviewapp.core.pacing import period_end
from reviewapp.notifications.models import Channel, Event, Mailbox, Message, Notice
from reviewapp.notifications.sending import message_send
from reviewapp.notifications.services import escalation_notices, mailbox_compose, preference_set
from reviewapp.review.models import Escalation, Proposal
from reviewapp.review.services.escalations import escalation_review
from tests.api.conftest import evaluated
from tests.factories import ReviewerFactory

from .conftest import smtp_to

pytestmark = pytest.mark.django_db

SECRET_TEXT = "Wire 9,000 EUR to account 12-34 @channel <!channel>"


def _escalation(title="", **panel_fields) -> Escalation:
    proposal = evaluated(SECRET_TEXT, requires_sign_off=True, **panel_fields)
    if title:
        Proposal.objects.filter(pk=proposal.pk).update(title=title)
    return Escalation.objects.select_related("proposal").get(proposal=proposal)


def _team(name="billing-team", *emails):
    group = Group.objects.create(name=name)
    people = [ReviewerFactory(email=e) for e in emails or ("ann@example.com",)]
    for person in people:
        person.groups.add(group)
    return group, people


def _email_channel(group=None, panel=None, events=(Event.ASSIGNED,)):
    return Channel.objects.create(
        name="mail", kind=Channel.Kind.EMAIL, group=group, panel=panel, events=list(events)
    )


def _sent(box: Mailbox, now=None) -> Message:
    message = mailbox_compose(mailbox_id=box.pk, now=now)
    assert message is not None
    assert message_send(message_id=message.pk) is None, Message.objects.get(pk=message.pk)
    return message


def test_an_assignment_reaches_each_member_of_the_group_by_email(smtp):
    group, (ann, ben) = _team("billing-team", "ann@example.com", "ben@example.com")
    _email_channel(group=group)
    escalation = _escalation()

    told = escalation_notices(event=Event.ASSIGNED, escalation=escalation, group_ids=[group.pk])

    assert told == 2
    for box in Mailbox.objects.all():
        _sent(box)
    received = smtp.wait_for(2)
    assert sorted(to[0] for to, _ in received) == ["ann@example.com", "ben@example.com"]
    _, email = received[0]
    body = email.get_payload(decode=True).decode()
    assert f"Escalation {escalation.pk}" in email["Subject"]
    assert f"http://localhost:8000/proposals/{escalation.proposal_id}" in body
    assert "assigned to you or your group" in body
    assert email["Message-ID"].startswith("<reviewapp.")


def test_a_message_never_carries_the_proposal_text_unless_the_panel_allows_it(smtp):
    group, _ = _team()
    _email_channel(group=group)
    escalation = _escalation(title="Pay the invoice")
    escalation_notices(event=Event.ASSIGNED, escalation=escalation, group_ids=[group.pk])
    _sent(Mailbox.objects.get())

    body = smtp.wait_for(1)[0][1].get_payload(decode=True).decode()

    assert "Wire 9,000" not in body and "Pay the invoice" not in body


def test_a_panel_that_allows_it_has_the_title_and_the_start_of_the_content_quoted(smtp):
    group, _ = _team()
    _email_channel(group=group)
    escalation = _escalation(title="Pay the invoice", notify_with_text=True)
    escalation_notices(event=Event.ASSIGNED, escalation=escalation, group_ids=[group.pk])
    _sent(Mailbox.objects.get())

    body = smtp.wait_for(1)[0][1].get_payload(decode=True).decode()

    assert '"Pay the invoice": Wire 9,000 EUR' in body


def test_a_reconcile_never_tells_the_reconcilers_how_anyone_reviewed(smtp):
    reconcilers, (rita,) = _team("reconcilers-x", "rita@example.com")
    _email_channel(group=reconcilers, events=[Event.RECONCILE])
    escalation = _escalation(reviews_needed=2)
    ann, ben = ReviewerFactory(username="ann"), ReviewerFactory(username="ben")
    for person, outcome in ((ann, "approved"), (ben, "rejected")):
        escalation_review(
            escalation_id=escalation.pk,
            outcome=outcome,
            rationale=f"{person.username} thinks so.",
            user=person,
            decided_by_name=person.username,
        )

    escalation_notices(
        event=Event.RECONCILE,
        escalation=escalation,
        group_ids=[reconcilers.pk],
        excluded_user_ids=[ann.pk, ben.pk],
    )
    _sent(Mailbox.objects.get(user=rita))

    body = smtp.wait_for(1)[0][1].get_payload(decode=True).decode()
    assert "the reviews disagree: a reconciler decides" in body
    for hidden in ("approved", "rejected", "ann", "ben", "thinks so"):
        assert hidden not in body


def test_a_person_who_chose_off_hears_nothing(smtp):
    group, (ann,) = _team()
    _email_channel(group=group)
    preference_set(user=ann, mode="off", digest_minutes=60)

    told = escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])

    assert told == 0 and not Notice.objects.exists()


def test_only_people_who_may_review_hear_of_an_escalation(smtp):
    group = Group.objects.create(name="mixed")
    outsider = ReviewerFactory(email="out@example.com")
    outsider.groups.clear()  # not a reviewer any more
    outsider.groups.add(group)
    _email_channel(group=group)

    assert (
        escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])
        == 0
    )


def test_a_burst_of_escalations_is_one_message():
    group, (ann,) = _team()
    _email_channel(group=group)
    escalations = [_escalation() for _ in range(30)]
    for escalation in escalations:
        escalation_notices(event=Event.ASSIGNED, escalation=escalation, group_ids=[group.pk])

    message = mailbox_compose(mailbox_id=Mailbox.objects.get(user=ann).pk)

    assert message.subject == "[reviewapp] 30 updates on review work"
    assert all(f"Escalation {e.pk} " in message.body for e in escalations)
    assert Notice.objects.filter(message=message).count() == 30
    assert mailbox_compose(mailbox_id=message.mailbox_id) is None  # nothing left


def test_someone_who_asked_at_once_hears_again_only_after_the_gap():
    group, (ann,) = _team()
    _email_channel(group=group)
    escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])
    box = Mailbox.objects.get(user=ann)
    first = mailbox_compose(mailbox_id=box.pk)
    escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])

    assert mailbox_compose(mailbox_id=box.pk, now=first.created_at + timedelta(seconds=30)) is None
    assert mailbox_compose(mailbox_id=box.pk, now=first.created_at + timedelta(seconds=61))


def test_a_digest_comes_once_per_period_with_everything_in_it():
    group, (ann,) = _team()
    _email_channel(group=group)
    preference_set(user=ann, mode="digest", digest_minutes=15)
    for _ in range(3):
        escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])
    box = Mailbox.objects.get(user=ann)
    oldest = Notice.objects.order_by("created_at").first().created_at
    boundary = oldest - timedelta(seconds=1)  # not before the period's end
    while True:
        boundary += timedelta(seconds=1)
        if (boundary.timestamp() % 900) < 1:
            break

    assert mailbox_compose(mailbox_id=box.pk, now=boundary - timedelta(seconds=2)) is None
    digest = mailbox_compose(mailbox_id=box.pk, now=boundary + timedelta(seconds=1))
    assert digest.subject == "[reviewapp] 3 updates on review work"
    escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])
    Notice.objects.filter(message__isnull=True).update(created_at=boundary - timedelta(seconds=5))
    assert mailbox_compose(mailbox_id=box.pk, now=boundary + timedelta(seconds=30)) is None


def test_a_shortened_digest_minute_shortens_the_digest_period(settings):
    settings.REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS = 2  # benchmarks' and tests' minutes
    group, (ann,) = _team()
    _email_channel(group=group)
    preference_set(user=ann, mode="digest", digest_minutes=3)  # 6 s
    escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])
    box = Mailbox.objects.get(user=ann)
    oldest = Notice.objects.get().created_at
    end = period_end(oldest, timedelta(seconds=6))

    assert mailbox_compose(mailbox_id=box.pk, now=end - timedelta(seconds=0.5)) is None
    assert mailbox_compose(mailbox_id=box.pk, now=end)


def test_a_chat_room_gets_one_post_and_a_hostile_title_cannot_ping_the_room(chat, settings):
    settings.REVIEWAPP_WEBHOOK_ALLOW_LOCAL = True
    escalation = _escalation(title="@channel <!here> [click](javascript:x)", notify_with_text=True)
    room = Channel.objects.create(
        name="billing room",
        kind=Channel.Kind.CHAT,
        panel_id=escalation.proposal.panel_id,
        events=[Event.ASSIGNED],
        url=chat.url,
    )

    escalation_notices(event=Event.ASSIGNED, escalation=escalation)
    _sent(Mailbox.objects.get(channel=room))

    [post] = chat.posts
    text = post["text"]
    assert f"Escalation {escalation.pk}" in text
    assert f"<http://localhost:8000/proposals/{escalation.proposal_id}|" in text
    assert "<!here>" not in text and "<!channel>" not in text and "@channel" not in text
    assert "&lt;!here&gt;" in text


def test_a_mattermost_room_gets_markdown_with_its_markup_escaped(chat, settings):
    settings.REVIEWAPP_WEBHOOK_ALLOW_LOCAL = True
    escalation = _escalation(title="@all [click](javascript:x)", notify_with_text=True)
    room = Channel.objects.create(
        name="room", kind=Channel.Kind.CHAT, panel_id=escalation.proposal.panel_id,
        events=[Event.ASSIGNED], url=chat.url, style=Channel.Style.MATTERMOST,
    )  # fmt: skip

    escalation_notices(event=Event.ASSIGNED, escalation=escalation)
    _sent(Mailbox.objects.get(channel=room))

    text = chat.posts[0]["text"]
    assert "@all" not in text and "](javascript" not in text
    assert f"](http://localhost:8000/proposals/{escalation.proposal_id})" in text


def test_a_chat_url_the_address_guard_refuses_is_a_failed_attempt_not_a_post(chat, settings):
    settings.REVIEWAPP_WEBHOOK_ALLOW_LOCAL = False  # loopback is a private address
    escalation = _escalation()
    room = Channel.objects.create(
        name="room", kind=Channel.Kind.CHAT, panel_id=escalation.proposal.panel_id,
        events=[Event.ASSIGNED], url=chat.url,
    )  # fmt: skip
    escalation_notices(event=Event.ASSIGNED, escalation=escalation)
    message = mailbox_compose(mailbox_id=Mailbox.objects.get(channel=room).pk)

    delay = message_send(message_id=message.pk)

    message.refresh_from_db()
    assert delay is not None and message.status == Message.Status.PENDING
    assert message.attempts == 1 and "refused" in message.last_error
    assert "room-secret" not in message.last_error
    assert chat.posts == []


def test_a_message_whose_smtp_server_is_down_is_retried_later(settings):
    smtp_to(settings, 9)  # nothing listens
    group, _ = _team()
    _email_channel(group=group)
    escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])
    message = mailbox_compose(mailbox_id=Mailbox.objects.get().pk)

    delay = message_send(message_id=message.pk)

    message.refresh_from_db()
    assert delay is not None and message.status == Message.Status.PENDING
    assert message.next_attempt_at > timezone.now() and message.last_error


def test_a_message_is_sent_by_one_sender_only():
    group, _ = _team()
    _email_channel(group=group)
    escalation_notices(event=Event.ASSIGNED, escalation=_escalation(), group_ids=[group.pk])
    message = mailbox_compose(mailbox_id=Mailbox.objects.get().pk)

    from reviewapp.notifications.sending import message_claim

    assert message_claim(message_id=message.pk) is not None
    assert message_claim(message_id=message.pk) is None  # leased
