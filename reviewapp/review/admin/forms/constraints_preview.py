"""The mandate textarea that previews, as you type, how its text lowers (lenses and checkers)."""

from django import forms
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from ...services.checkers_config import constraints_preview

PREVIEW_URL_NAME = "admin:review_checkerconfig_constraints_preview"


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
