"""Forms and widgets for the configuration admin."""

import json

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from reviewapp.core import checkers as core_checkers
from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.quorum import (
    NeedsNobody,
    NotAMajority,
    Quorum,
    QuorumError,
    Unreachable,
    allowed_needs_text,
)

from .models import ApiClient, CheckerConfig, Lens, Panel, PanelLens
from .services.checkers_config import constraints_preview, grants_refusal
from .services.clients import api_client_scopes_refusal
from .services.lenses import env_name_problem, judge_clients_refusal

PREVIEW_URL_NAME = "admin:review_checkerconfig_constraints_preview"
PANEL_VALIDATE_URL_NAME = "admin:review_panel_validate"
# The quorum refusals that are about the need (the others are about the lens rows).
NEED_REFUSALS = (NeedsNobody, Unreachable, NotAMajority)
# The formset's pointer to the need's error; the live check, shown at the need, omits it.
SEE_NEED = "see_need"


def render_constraints_preview(text: str) -> str:
    return render_to_string(
        "admin/review/constraints_preview.html", {"preview": constraints_preview(text or "")}
    )


class ConstraintsPreviewWidget(forms.Textarea):
    """A mandate textarea that shows, as you type, how its text lowers (htmx)."""

    def __init__(self, attrs=None):
        super().__init__({"rows": 5, "cols": 80, **(attrs or {})})

    def render(self, name, value, attrs=None, renderer=None):
        attrs = dict(attrs or {})
        target = f"{attrs.get('id') or 'id_' + name}-preview"
        try:
            url = reverse(PREVIEW_URL_NAME)
        except NoReverseMatch:
            url = ""
        if url:
            attrs.update(
                {
                    "hx-post": url,
                    "hx-trigger": "input changed delay:300ms",
                    "hx-target": f"#{target}",
                    "hx-swap": "innerHTML",
                    # Only the text and the CSRF token: nothing else in the form is read.
                    "hx-params": f"{name},csrfmiddlewaretoken",
                }
            )
        textarea = super().render(name, value, attrs, renderer)
        preview = render_constraints_preview(value or "")
        return format_html(
            '{}<div id="{}" class="constraints-preview" aria-live="polite">{}</div>',
            textarea,
            target,
            preview,
        )


# ── lenses ─────────────────────────────────────────────────────────────────


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


# ── panels ─────────────────────────────────────────────────────────────────


class NeedWidget(forms.NumberInput):
    """The need, with the live quorum check (htmx) right under it, where it is being typed."""

    def render(self, name, value, attrs=None, renderer=None):
        field = super().render(name, value, attrs, renderer)
        try:
            url = reverse(PANEL_VALIDATE_URL_NAME)
        except NoReverseMatch:
            return field
        return format_html(
            '{}<div id="panel-validation" class="panel-validation" aria-live="polite" '
            'hx-post="{}" hx-include="closest form" '
            'hx-trigger="change from:closest form, input from:closest form delay:400ms" '
            'hx-swap="innerHTML"></div>',
            field,
            url,
        )


class PanelAdminForm(forms.ModelForm):
    class Meta:
        model = Panel
        fields = (
            "name",
            "description",
            "need",
            "active",
            "grounding_policy",
            "requires_sign_off",
            "external_deadline_seconds",
            "checkers",
        )
        widgets = {
            "need": NeedWidget(),
            "checkers": forms.CheckboxSelectMultiple,
            "description": forms.Textarea(attrs={"rows": 2, "cols": 80}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The lens formset validates against this form's `need` and reports there.
        self.instance._admin_form = self


class PanelLensInlineForm(forms.ModelForm):
    class Meta:
        model = PanelLens
        fields = ("lens", "position")

    # A lens listed twice is the quorum's refusal (RepeatedLens), reported by the
    # formset in the reference's words; the rows are rewritten on save, so a
    # per-row lookup against the stored rows would only misreport a reordering.
    def validate_unique(self):
        pass

    def validate_constraints(self):
        pass


class PanelLensFormSet(BaseInlineFormSet):
    """The panel's lenses, validated together with the panel's need by core.quorum."""

    ordered_lenses: list[Lens] = []

    def _kept_forms(self):
        deleted = set(self.deleted_forms) if self.can_delete else set()
        return [
            (index, form)
            for index, form in enumerate(self.forms)
            if form not in deleted and form.cleaned_data and form.cleaned_data.get("lens")
        ]

    def clean(self):
        if any(form.errors for form in self.forms):
            return
        kept = self._kept_forms()
        kept.sort(key=lambda item: (item[1].cleaned_data.get("position") or 0, item[0]))
        self.ordered_lenses = [form.cleaned_data["lens"] for _, form in kept]

        parent = getattr(self.instance, "_admin_form", None)
        if parent is not None and not parent.is_valid() and "need" in parent.errors:
            return  # the need itself is unusable; that error is already shown
        need = self.instance.need
        if need is None:
            return
        try:
            Quorum(need, [lens.name for lens in self.ordered_lenses])
        except NEED_REFUSALS as exc:
            # Said at the need, with the needs that work. The admin has validated
            # the panel form already, so only the formset's own error blocks the save.
            message = f"{exc}. {allowed_needs_text(len(self.ordered_lenses))}"
            if parent is None:
                raise ValidationError(message, code="quorum") from exc
            parent.add_error("need", ValidationError(message, code="quorum"))
            raise ValidationError(
                "The need and these lenses make no quorum: see the Need field.", code=SEE_NEED
            ) from exc
        except QuorumError as exc:
            # About the lens rows: reported once, above them.
            raise ValidationError(str(exc), code="quorum") from exc
        super().clean()


# ── checkers ───────────────────────────────────────────────────────────────


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


class CheckerAdminForm(forms.ModelForm):
    """Kind-specific settings as fields of their own; assembled into `settings` on clean."""

    mandate = forms.CharField(
        required=False,
        strip=False,
        widget=ConstraintsPreviewWidget(),
        help_text="Clauses separated by ';'. Each is listed below as checkable or unenforced.",
    )
    schema = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
        help_text="A JSON Schema the proposal content must satisfy.",
    )
    pattern = forms.CharField(required=False, strip=False)
    must_match = forms.BooleanField(
        required=False, initial=True, help_text="Unticked: the content must NOT match."
    )
    argv = forms.CharField(
        required=False,
        label="Command",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="One argument per line; the first is the executable. No shell. "
        "The proposal arrives on stdin; exit 0 passes, 1 fails.",
    )
    timeout_seconds = forms.FloatField(required=False, min_value=0.001, initial=10)
    grants = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="One per line, e.g. proc:exec:/usr/bin/python3. A checker may hold only "
        + ", ".join(sorted(core_checkers.CHECKER_CEILING))
        + ".",
    )

    KIND_FIELD = {
        CheckerConfig.Kind.CONSTRAINTS: "mandate",
        CheckerConfig.Kind.JSON_SCHEMA: "schema",
        CheckerConfig.Kind.REGEX: "pattern",
        CheckerConfig.Kind.COMMAND: "argv",
    }

    class Meta:
        model = CheckerConfig
        fields = ("name", "kind", "active")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        s = self.instance.settings or {}
        if self.instance.pk:
            self.initial.setdefault("mandate", s.get("mandate", ""))
            if "schema" in s:
                self.initial.setdefault("schema", s["schema"])
            self.initial.setdefault("pattern", s.get("pattern", ""))
            self.initial.setdefault("must_match", s.get("must_match", True))
            self.initial.setdefault("argv", "\n".join(s.get("argv", [])))
            self.initial.setdefault("timeout_seconds", s.get("timeout_seconds", 10))
            self.initial["grants"] = "\n".join(self.instance.grants or [])

    def clean_grants(self):
        return _lines(self.cleaned_data.get("grants"))

    def clean_argv(self):
        return _lines(self.cleaned_data.get("argv"))

    def _settings_for(self, kind: str) -> dict:
        d = self.cleaned_data
        match kind:
            case CheckerConfig.Kind.CONSTRAINTS:
                return {"mandate": d.get("mandate") or ""}
            case CheckerConfig.Kind.JSON_SCHEMA:
                return {"schema": d.get("schema")}
            case CheckerConfig.Kind.REGEX:
                return {"pattern": d.get("pattern") or "", "must_match": bool(d.get("must_match"))}
            case CheckerConfig.Kind.COMMAND:
                timeout = d.get("timeout_seconds")
                return {"argv": d.get("argv") or [], "timeout_seconds": timeout or 10}
        return {}

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind")
        name = cleaned.get("name") or self.instance.name or ""
        if not kind or self.errors:
            return cleaned
        grants = cleaned.get("grants") or []
        refusal = grants_refusal(name, grants)
        if refusal:
            # The core's words name every refused grant.
            self.add_error("grants", refusal)
            return cleaned
        settings = self._settings_for(kind)
        field = self.KIND_FIELD.get(kind)
        if kind == CheckerConfig.Kind.JSON_SCHEMA and settings["schema"] is None:
            self.add_error("schema", "A JSON Schema checker needs a schema.")
            return cleaned
        if kind == CheckerConfig.Kind.COMMAND and not settings["argv"]:
            self.add_error("argv", "A command checker needs a command to run.")
            return cleaned
        probe = CheckerConfig(
            name=name, kind=kind, settings=settings, grants=grants, version=self.instance.version
        )
        try:
            probe.build()
        except core_checkers.GrantRefused as exc:
            self.add_error("grants", str(exc))
        except (core_checkers.CheckError, ValueError, TypeError) as exc:
            self.add_error(field, str(exc))
        else:
            self.instance.settings = settings
            self.instance.grants = grants
        return cleaned

    def _post_clean(self):
        # With an error already shown, the model's own clean() would restate it
        # against half-updated values; it runs (and Lens-style save() re-runs it)
        # once the form is otherwise valid.
        if self._errors:
            return
        super()._post_clean()


# ── API clients ────────────────────────────────────────────────────────────


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


def pretty_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
