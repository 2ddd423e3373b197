"""The assignment rule form: it takes no rule that could never assign anything."""

from django import forms

from ...models import AssignmentRule, Escalation


class AssignmentRuleForm(forms.ModelForm):
    class Meta:
        model = AssignmentRule
        fields = ("panel", "reason", "assigned_user", "assigned_group")

    def clean(self):
        cleaned = super().clean()
        panel, reason = cleaned.get("panel"), cleaned.get("reason") or ""
        disagree = Escalation.Reason.REVIEWERS_DISAGREE.value
        if reason == disagree and panel is not None and panel.reviews_needed <= 1:
            raise forms.ValidationError(
                f"Panel {panel.name} takes one review, so its reviewers never disagree: "
                "raise its reviews needed first, or choose another reason."
            )
        earlier = AssignmentRule.objects.filter(panel=panel, reason=reason)
        if self.instance.pk is not None:
            earlier = earlier.exclude(pk=self.instance.pk)
        if (panel is not None or reason) and earlier.exists():
            # The oldest of equally specific rules wins: a second one never would.
            raise forms.ValidationError(
                f"Rule {earlier.first()} already assigns these escalations, and the oldest "
                "such rule wins: change that one instead."
            )
        return cleaned
