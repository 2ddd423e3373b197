"""The guarantee in the admin: its settings page, and its figures on the panel's page.

review.admin's panel page shows `panel_guarantee_html` (admin modules may look
anywhere), with a link here. Settings are saved through `guarantee_configure`,
never as a bare row, so every pattern's standing is computed again and each
change of trust announced; saving returns to the panel's page, where the
promise reads in words.
"""

from django import forms
from django.contrib import admin
from django.http import HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from reviewapp.review.models import Panel

from .configure import guarantee_configure
from .explain import percent, promise
from .models import CONFIDENCE_MAX, CONFIDENCE_MIN, TARGET_MAX, TARGET_MIN, PanelGuarantee
from .queries import guarantee_figures


def _share(value: float | None, *, low: float, high: float, what: str) -> float | None:
    """A share from low to high; a percentage typed by habit is named as one."""
    if value is None:
        return None
    if 1 < value <= 100:
        raise forms.ValidationError(
            f"{value:g} looks like a percentage: write it as a share, {value / 100:g}."
        )
    if not low <= value <= high:
        raise forms.ValidationError(
            f"{what} must lie from {low:g} to {high:g} ({percent(low)} to {percent(high)}); "
            f"{value:g} is outside."
        )
    return value


class GuaranteeForm(forms.ModelForm):
    class Meta:
        model = PanelGuarantee
        fields = ("panel", "target", "confidence", "audit_focus")
        widgets = {
            "target": forms.NumberInput(attrs={"step": "0.001", "placeholder": "off"}),
            "confidence": forms.NumberInput(attrs={"step": "0.001"}),
        }
        error_messages = {"confidence": {"required": "Give a confidence, e.g. 0.95."}}

    def clean_target(self):
        return _share(
            self.cleaned_data.get("target"),
            low=TARGET_MIN,
            high=TARGET_MAX,
            what="The target agreement",
        )

    def clean_confidence(self):
        value = self.cleaned_data.get("confidence")
        return _share(value, low=CONFIDENCE_MIN, high=CONFIDENCE_MAX, what="The confidence")


@admin.register(PanelGuarantee)
class PanelGuaranteeAdmin(admin.ModelAdmin):
    """A panel's guarantee; a panel without a row has none (one is made, off, by its first
    human label)."""

    form = GuaranteeForm
    list_display = ("panel", "target", "confidence", "audit_focus", "promise")
    list_select_related = ("panel",)
    search_fields = ("panel__name",)
    fields = ("panel", "promise", "target", "confidence", "audit_focus")
    readonly_fields = ("promise",)

    @admin.display(description="In words")
    def promise(self, obj):
        if obj is None or obj.pk is None:
            return "Set a target to give this panel a guarantee."
        return promise(target=obj.target, confidence=obj.confidence)

    def get_readonly_fields(self, request, obj=None):
        # The panel a guarantee belongs to never changes.
        return (*self.readonly_fields, "panel") if obj else self.readonly_fields

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        initial.setdefault("confidence", 0.95)
        return initial

    def save_model(self, request, obj, form, change):
        # Through the service: it locks the row, records the change and recomputes the
        # standings; a label arriving meanwhile waits and counts under the new settings.
        guarantee_configure(
            panel=obj.panel,
            target=obj.target,
            confidence=obj.confidence,
            audit_focus=obj.audit_focus,
            actor=request.user,
        )
        obj.pk = PanelGuarantee.objects.values_list("pk", flat=True).get(panel=obj.panel)

    def response_add(self, request, obj, post_url_continue=None):
        return self._to_panel(request, obj) or super().response_add(request, obj)

    def response_change(self, request, obj):
        return self._to_panel(request, obj) or super().response_change(request, obj)

    def _to_panel(self, request, obj):
        """Back to the panel's page, where the promise and its evidence are shown."""
        if "_continue" in request.POST or "_addanother" in request.POST:
            return None
        return HttpResponseRedirect(reverse("admin:review_panel_change", args=[obj.panel_id]))


def guarantee_settings_url(panel: Panel) -> str:
    existing = PanelGuarantee.objects.filter(panel=panel).values_list("pk", flat=True).first()
    if existing:
        return reverse("admin:guarantee_panelguarantee_change", args=[existing])
    return reverse("admin:guarantee_panelguarantee_add") + "?" + urlencode({"panel": panel.pk})


def panel_guarantee_html(panel: Panel) -> SafeString:
    """The promise in words, each vote pattern's evidence, the overall agreement, and the
    way to the settings."""
    figures = render_to_string(
        "guarantee/_figures.html", {"figures": guarantee_figures(panel), "table_class": ""}
    )
    return format_html(
        '{}<p><a href="{}" data-guarantee-settings>Set the guarantee</a> (target, '
        "confidence, where audits go).</p>",
        SafeString(figures),
        guarantee_settings_url(panel),
    )
