"""`manage.py rebuild_calibration`: labels for decisions made before the calibration app."""

from io import StringIO

import pytest
from django.core.management import call_command

from reviewapp.calibration.models import HumanLabel, LensAgreementDay, LensLabel
from tests.calibration.builders import adjudicated, panel_of

pytestmark = pytest.mark.django_db


def test_the_command_writes_labels_for_decisions_that_have_none():
    panel, (a, b) = panel_of("alpha", "beta")
    adjudicated(panel, {a: "pass", b: "fail"}, "approved")
    # As after an upgrade: the decision predates its labels.
    LensLabel.objects.all().delete()
    HumanLabel.objects.all().delete()
    LensAgreementDay.objects.all().delete()
    out = StringIO()

    call_command("rebuild_calibration", stdout=out)

    assert "1 human label(s)" in out.getvalue()
    assert set(LensLabel.objects.values_list("lens_id", "passed", "approved")) == {
        (a.pk, True, True),
        (b.pk, False, True),
    }
