"""The samples a lens or a checker is tried on."""

from django import forms

from reviewapp.core.cite import GroundingPolicy


class TrialForm(forms.Form):
    sample = forms.CharField(
        label="Sample answer",
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10, "cols": 90}),
        help_text="Pasted as a proposal's answer body. Nothing is stored as a proposal.",
    )
    thought_process = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 90})
    )
    grounding_policy = forms.ChoiceField(
        choices=[(p.value, p.value.title()) for p in GroundingPolicy],
        initial=GroundingPolicy.REJECT.value,
    )


class CheckerTrialForm(forms.Form):
    sample = forms.CharField(
        label="Sample content",
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10, "cols": 90}),
        help_text="Judged as a proposal's content. The verdict is signed with a throwaway key.",
    )
