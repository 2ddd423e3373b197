"""The lens form."""

from django import forms
from django.core.exceptions import ValidationError

from ...models import Lens
from ...services.lenses import env_name_problem, judge_clients_refusal
from .constraints_preview import ConstraintsPreviewWidget


class LensAdminForm(forms.ModelForm):
    class Meta:
        model = Lens
        fields = (
            "name",
            "description",
            "instructions",
            "backend",
            "active",
            "base_url",
            "model",
            "api_key_env",
            "temperature",
            "timeout_seconds",
            "response_format",
            "max_concurrent_calls",
            "calls_per_minute",
            "deadline_seconds",
            "mandate",
            "judge_clients",
            "allow_self_judgement",
        )
        widgets = {
            "judge_clients": forms.CheckboxSelectMultiple(),
            "mandate": ConstraintsPreviewWidget(),
            "instructions": forms.Textarea(attrs={"rows": 4, "cols": 80}),
            "description": forms.Textarea(attrs={"rows": 2, "cols": 80}),
        }

    def clean_api_key_env(self):
        name = (self.cleaned_data.get("api_key_env") or "").strip()
        problem = env_name_problem(name)
        if problem:
            raise ValidationError(problem)
        return name

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("backend") == Lens.Backend.EXTERNAL:
            refusal = judge_clients_refusal(cleaned.get("judge_clients") or [])
            if refusal:
                self.add_error("judge_clients", refusal)
        return cleaned
