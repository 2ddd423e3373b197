"""The checker form: kind-specific settings as fields of their own."""

from django import forms

from reviewapp.core import checkers as core_checkers

from ...models import CheckerConfig
from ...services.checkers_config import grants_refusal
from .constraints_preview import ConstraintsPreviewWidget


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
