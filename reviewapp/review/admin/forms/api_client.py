"""Creating an API client and changing its name and scopes."""

from django import forms
from django.core.exceptions import ValidationError

from ...models import ApiClient
from ...services.clients import api_client_scopes_refusal


class ApiClientCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    scopes = forms.MultipleChoiceField(
        choices=ApiClient.Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="submit: send proposals; judge: send external judgements (for the lenses "
        "that name this client); read: read its own proposals and those it judges; "
        "read:all: read every client's proposals; review: adjudicate escalations.",
    )


class ApiClientChangeForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=ApiClient.Scope.choices, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = ApiClient
        fields = ("name", "scopes")

    def clean_scopes(self):
        scopes = self.cleaned_data["scopes"]
        refusal = api_client_scopes_refusal(self.instance, scopes)
        if refusal:
            raise ValidationError(refusal)
        return scopes
