from reviewapp.core.checkers import CheckVerdict
from reviewapp.core.quorum import NoQuorum, Reached, Tally, Verdict
from reviewapp.core.routing import route

PASS, FAIL, INCONCLUSIVE = CheckVerdict.PASS, CheckVerdict.FAIL, CheckVerdict.INCONCLUSIVE
REACHED_PASS = Reached(Verdict.PASS, Tally(passed=3, failed=0, asked=3))
REACHED_FAIL = Reached(Verdict.FAIL, Tally(passed=0, failed=3, asked=3))
SPLIT = NoQuorum(Tally(passed=2, failed=1, asked=3))


def test_a_failing_checker_rejects_whatever_the_panel_said():
    for panel in (REACHED_PASS, REACHED_FAIL, SPLIT):
        result = route(checker_verdicts=[PASS, FAIL], panel=panel)
        assert result.outcome == "rejected" and not result.escalates


def test_an_inconclusive_checker_escalates_even_when_the_panel_reached_a_verdict():
    for panel in (REACHED_PASS, REACHED_FAIL):
        result = route(checker_verdicts=[INCONCLUSIVE, PASS], panel=panel)
        assert result.escalates and result.reasons == ("inconclusive",)


def test_no_quorum_escalates():
    result = route(checker_verdicts=[PASS], panel=SPLIT)
    assert result.escalates and result.reasons == ("no_quorum",)


def test_a_panel_reaching_fail_rejects():
    assert route(checker_verdicts=[PASS], panel=REACHED_FAIL).outcome == "rejected"


def test_a_panel_reaching_pass_with_passing_checkers_approves():
    assert route(checker_verdicts=[PASS], panel=REACHED_PASS).outcome == "approved"


def test_sign_off_panels_escalate_a_reached_pass():
    result = route(checker_verdicts=[], panel=REACHED_PASS, requires_sign_off=True)
    assert result.escalates and result.reasons == ("sign_off",)


def test_a_missing_lens_blocks_approval_and_is_named():
    result = route(checker_verdicts=[PASS], panel=REACHED_PASS, failed_lenses=["policy"])
    assert result.escalates and result.reasons == ("lens_failed",)


def test_a_missing_lens_does_not_block_a_rejection():
    result = route(checker_verdicts=[], panel=REACHED_FAIL, failed_lenses=["policy"])
    assert result.outcome == "rejected"


def test_every_escalation_reason_is_listed_together():
    result = route(checker_verdicts=[INCONCLUSIVE], panel=SPLIT, failed_lenses=["policy"])
    assert result.reasons == ("inconclusive", "no_quorum", "lens_failed")
