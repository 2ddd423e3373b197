"""The panel form and its lens rows, checked together by core.quorum."""

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from reviewapp.core.quorum import (
    NeedsNobody,
    NotAMajority,
    Quorum,
    QuorumError,
    Unreachable,
    allowed_needs_text,
)

from ...models import Lens, Panel, PanelLens

PANEL_VALIDATE_URL_NAME = "admin:review_panel_validate"
# The quorum refusals that are about the need (the others are about the lens rows).
NEED_REFUSALS = (NeedsNobody, Unreachable, NotAMajority)
# The formset's pointer to the need's error; the live check, shown at the need, omits it.
SEE_NEED = "see_need"


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


APPROVE_WARNING = (
    "Approve on deadline lets work through that no person and no passing panel approved: "
    "whatever waits past the deadline is approved, whatever it says. Tick the box to confirm "
    "this is what the panel should do."
)


class PanelAdminForm(forms.ModelForm):
    confirm_approve_fallback = forms.BooleanField(
        required=False,
        label="Yes, approve on deadline",
        help_text="Needed once, when a panel with a review deadline is set to approve on it: "
        + APPROVE_WARNING,
    )

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
        if "priority" in self.fields:
            # Left out of a post (a script, an older form): kept as it is.
            self.fields["priority"].required = False

    def clean_priority(self):
        value = self.cleaned_data.get("priority")
        return self.instance.priority if value is None else value

    def clean(self):
        cleaned = super().clean()
        approving = (
            cleaned.get("on_deadline") == "approve" and cleaned.get("review_deadline") is not None
        )
        already = (
            self.instance.pk is not None
            and self.instance.on_deadline == "approve"
            and self.instance.review_deadline is not None
        )
        if approving and not already and not cleaned.get("confirm_approve_fallback"):
            self.add_error("confirm_approve_fallback", APPROVE_WARNING)
        return cleaned


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
