"""The draft a replay tries: a changed lens, a changed panel, and what to replay it on."""

from django import forms

from reviewapp.core.llm_endpoints import base_url_problem
from reviewapp.review.evaluation.endpoint_policy import endpoint_policy
from reviewapp.review.models import Lens, Panel

from .models import Replay


class ReplayForm(forms.Form):
    panel = forms.ModelChoiceField(queryset=Panel.objects.all())
    lens = forms.ModelChoiceField(
        queryset=Lens.objects.all(),
        required=False,
        label="Lens to change",
        help_text="Leave empty to change only the panel. Blank fields below keep the lens's own.",
    )
    instructions = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 6, "cols": 90})
    )
    model = forms.CharField(required=False, max_length=200)
    base_url = forms.URLField(required=False, label="Endpoint (base URL)")
    mandate = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 90})
    )
    members = forms.ModelMultipleChoiceField(
        queryset=Lens.objects.order_by("name"),
        required=False,
        # Ticks, not a multi-select that needs Ctrl-click and loses a choice to a stray click.
        widget=forms.CheckboxSelectMultiple,
        label="Draft panel's lenses",
        help_text="Tick the lenses of the draft panel; none ticked keeps the panel's own. "
        "A lens new to the panel is run for real.",
    )
    need = forms.IntegerField(
        required=False, min_value=1, help_text="Empty keeps the panel's need."
    )
    source = forms.ChoiceField(choices=Replay.Source.choices, initial=Replay.Source.RECENT)
    size = forms.IntegerField(
        min_value=1,
        max_value=10000,
        initial=100,
        label="N",
        help_text="How many proposals, newest first. If the panel has fewer, the next page "
        "says how many before anything runs.",
    )

    def lens_changes(self) -> dict[int, dict]:
        data = self.cleaned_data
        lens = data.get("lens")
        if lens is None:
            return {}
        changes = {
            name: data[name]
            for name in ("instructions", "model", "base_url", "mandate")
            if data.get(name)
        }
        return {lens.pk: changes}

    def clean_base_url(self):
        url = self.cleaned_data.get("base_url")
        problem = base_url_problem(url, endpoint_policy()) if url else None
        if problem:
            raise forms.ValidationError(problem[0].upper() + problem[1:] + ".")
        return url

    def clean(self):
        data = super().clean()
        lens, members = data.get("lens"), data.get("members")
        if lens is not None and data.get("panel") is not None:
            current = set(data["panel"].lenses.values_list("pk", flat=True))
            among = {m.pk for m in members} if members else current
            if lens.pk not in among:
                self.add_error(
                    "lens", f"{lens} is not a member of the draft panel: add it to the members."
                )
        return data
