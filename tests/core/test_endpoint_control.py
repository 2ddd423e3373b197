import pytest

from reviewapp.core.endpoint_control import (
    BACKOFF,
    PROBE_SLOWDOWN,
    Control,
    Outcome,
    allowed,
    held_for,
    refusals_for,
    start,
    update,
)

NOW = 1_000.0


def refused(sent_at=NOW - 1, retry_after=None):
    return Outcome(refused=True, sent_at=sent_at, retry_after=retry_after)


def served(sent_at=NOW - 1):
    return Outcome(refused=False, sent_at=sent_at)


def test_the_limit_starts_at_the_configured_maximum():
    assert allowed(start(1024), 1024) == 1024


def test_a_refusal_while_the_limit_is_used_cuts_it_multiplicatively():
    after = update(Control(limit=10), [refused()], in_flight=10, now=NOW, maximum=1024)
    assert after.limit == pytest.approx(10 * BACKOFF)
    assert allowed(after, 1024) == 7


def test_refusals_of_calls_sent_before_the_cut_cut_only_once():
    cut = update(Control(limit=10), [refused()], in_flight=10, now=NOW, maximum=1024)
    again = update(cut, [refused(sent_at=NOW - 0.5)], in_flight=9, now=NOW + 0.1, maximum=1024)
    assert again.limit == cut.limit


def test_a_refusal_of_a_call_sent_after_the_cut_cuts_again():
    cut = update(Control(limit=10), [refused()], in_flight=10, now=NOW, maximum=1024)
    later = update(cut, [refused(sent_at=NOW + 1)], in_flight=7, now=NOW + 2, maximum=1024)
    assert later.limit == pytest.approx(10 * BACKOFF * BACKOFF)


def test_a_refusal_far_under_the_limit_does_not_cut_it():
    # 200 calls in flight under a limit of 1,024: a provider refusing some of
    # them at random is not refusing our limit.
    after = update(start(1024), [refused()], in_flight=200, now=NOW, maximum=1024)
    assert after.limit == 1024


def test_a_round_whose_calls_are_mostly_refused_drops_to_what_is_still_in_flight():
    # A flood of 600 at a provider holding 8: the refusals come back first.
    control = update(start(1024), [refused()], in_flight=600, now=NOW, maximum=1024)
    for in_flight in (500, 300, 100, 12):
        control = update(
            control, [refused(sent_at=NOW - 1)], in_flight=in_flight, now=NOW, maximum=1024
        )
    assert allowed(control, 1024) == 12


def test_a_round_refused_only_in_part_keeps_its_limit():
    control = update(Control(limit=300), [refused()], in_flight=250, now=NOW, maximum=1024)
    cut = control.limit
    for in_flight in (240, 220, 200):  # a fifth refused, at random
        control = update(control, [refused()], in_flight=in_flight, now=NOW, maximum=1024)
    assert control.limit == cut


def test_a_success_grows_the_limit_by_one_call_per_round():
    control = Control(limit=10)
    for _ in range(10):
        control = update(control, [served()], in_flight=1, now=NOW, maximum=1024)
    assert control.limit == pytest.approx(11, abs=0.05)


def test_the_limit_never_grows_past_the_maximum():
    after = update(start(8), [served()] * 50, in_flight=8, now=NOW, maximum=8)
    assert after.limit == 8


def test_a_success_lifts_the_limit_to_the_calls_the_provider_is_serving():
    after = update(Control(limit=5.6), [served()], in_flight=8, now=NOW, maximum=1024)
    assert allowed(after, 1024) == 8


def test_growth_is_slower_near_where_the_provider_last_refused():
    near = update(Control(limit=8, ceiling=9), [served()], in_flight=1, now=NOW, maximum=1024)
    far = update(Control(limit=8, ceiling=30), [served()], in_flight=1, now=NOW, maximum=1024)
    assert (near.limit - 8) * PROBE_SLOWDOWN == pytest.approx(far.limit - 8)


def test_retry_after_holds_the_whole_endpoint():
    after = update(start(1024), [refused(retry_after=2)], in_flight=3, now=NOW, maximum=1024)
    assert held_for(after, NOW + 0.5) == pytest.approx(1.5)
    assert held_for(after, NOW + 2.5) == 0


def test_a_shorter_retry_after_does_not_end_a_longer_hold():
    control = update(start(1024), [refused(retry_after=5)], in_flight=3, now=NOW, maximum=1024)
    control = update(control, [refused(retry_after=1)], in_flight=3, now=NOW + 1, maximum=1024)
    assert held_for(control, NOW + 1) == pytest.approx(4)


def test_the_limit_never_falls_below_one_call():
    control = Control(limit=1)
    for step in range(5):
        control = update(
            control, [refused(sent_at=NOW + step)], in_flight=1, now=NOW + step + 1, maximum=1024
        )
    assert allowed(control, 1024) == 1


def test_a_lower_maximum_caps_a_limit_learnt_under_a_higher_one():
    assert allowed(Control(limit=500), 64) == 64


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.2, "1 second"),
        (45.4, "45 seconds"),
        (60, "1 minute"),
        (150, "2 minutes"),
        (600, "10 minutes"),
    ],
)
def test_how_long_refusals_lasted_reads_in_seconds_under_a_minute_then_minutes(seconds, said):
    assert refusals_for(seconds) == said


def served_at(count, sent_at=NOW - 1):
    return Outcome(refused=False, sent_at=sent_at, sent_in_flight=count)


def test_a_cut_never_goes_below_the_concurrency_the_provider_served_since_the_last_round():
    # A share refused at random: calls sent at up to 300 in flight were served.
    control = update(Control(limit=300), [served_at(300)], in_flight=300, now=NOW, maximum=1024)
    after = update(control, [refused(sent_at=NOW)], in_flight=300, now=NOW + 1, maximum=1024)
    assert allowed(after, 1024) == 300


def test_random_refusals_round_after_round_do_not_wear_the_limit_down():
    control, now = Control(limit=300), NOW
    for _ in range(20):
        control = update(control, [served_at(300)], in_flight=250, now=now, maximum=1024)
        control = update(control, [refused(sent_at=now)], in_flight=300, now=now + 1, maximum=1024)
        now += 2
    assert allowed(control, 1024) >= 300


def test_a_probe_past_a_cap_settles_back_on_the_cap():
    # Served at up to 8 in flight; the 9th call is refused.
    control = update(Control(limit=9), [served_at(8)], in_flight=9, now=NOW, maximum=1024)
    after = update(control, [refused(sent_at=NOW)], in_flight=9, now=NOW + 1, maximum=1024)
    assert allowed(after, 1024) == 8
