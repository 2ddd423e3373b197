"""Calibration in the configuration admin: a lens's floor and agreement, a panel's pairs and audits.

The figures are shown on the lens's and the panel's own admin pages (review.admin
adds them); the floors have their own page.
"""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe

from reviewapp.audit.models import AuditEntry
from reviewapp.audit.services import audit_record
from reviewapp.core.calibration import DEFAULT_FLOOR, DEFAULT_WINDOW, lens_standing
from reviewapp.review.models import Lens, Panel

from .models import LensFloor
from .queries import Window, lens_figures, pair_co_errors, panel_audits
from .services import floor_update

FLOOR_EXPLAINED = (
    f"The lens is flagged (dashboard, admin, and every proposal page it judged since) when its "
    f"Cohen's kappa with the reviewers over its last N adjudications falls below the floor; "
    f"an audit entry is written and one lens.drift webhook fires per crossing, lens.recovered "
    f"when it is back. Defaults: floor {DEFAULT_FLOOR} (below 0.4 is 'fair' agreement or worse "
    f"on Landis & Koch's scale) over the last {DEFAULT_WINDOW} adjudications (enough for an "
    "interval of about ±0.22 at kappa 0.6; fewer, and the check waits)."
)


@admin.register(LensFloor)
class LensFloorAdmin(admin.ModelAdmin):
    """Each lens's agreement floor; a lens without a row has the defaults (one is made on its
    first adjudication)."""

    list_display = ("lens", "floor", "window", "state", "last_kappa_shown", "evaluated_at")
    list_filter = ("drifting",)
    list_select_related = ("lens",)
    fields = ("lens", "floor", "window", "state", "last_kappa_shown", "drifted_at", "evaluated_at")
    readonly_fields = ("state", "last_kappa_shown", "drifted_at", "evaluated_at")
    search_fields = ("lens__name",)

    # Words, not Django's boolean icons: on "drifting" its green tick marked the lens in trouble.
    @admin.display(description="state", ordering="drifting")
    def state(self, obj: LensFloor) -> str:
        if obj.drifting:
            return mark_safe('<span class="flag" data-state="below">⚠ below its floor</span>')
        if obj.last_kappa is None:
            return format_html(
                '<span data-state="unchecked" title="fewer than {} decisions, or all in one '
                'class">no kappa yet</span>',
                obj.window,
            )
        return mark_safe('<span data-state="ok">at or above its floor</span>')

    # Rounded for people; the API and the exports keep the raw value.
    @admin.display(description="last kappa", ordering="last_kappa")
    def last_kappa_shown(self, obj: LensFloor) -> str:
        if obj.last_kappa is None:
            return "—"
        return f"{obj.last_kappa:.3f} (over its last {obj.window} decisions)"

    def get_readonly_fields(self, request, obj=None):
        # The lens a floor belongs to never changes.
        return (*self.readonly_fields, "lens") if obj else self.readonly_fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.base_fields["floor"].help_text += " " + FLOOR_EXPLAINED
        return form

    def save_model(self, request, obj, form, change):
        # Through the service: it locks the floor's row, so a drift check meanwhile waits.
        obj.pk = floor_update(lens=obj.lens, floor=obj.floor, window=obj.window).pk
        audit_record(
            actor=request.user,
            action=AuditEntry.Action.UPDATE if change else AuditEntry.Action.CREATE,
            target_type="lens",
            target=obj.lens,
            changes={
                name: {"old": form.initial.get(name), "new": form.cleaned_data[name]}
                for name in form.changed_data
                if name in ("floor", "window")
            },
            note="agreement floor",
        )


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def lens_agreement_html(lens: Lens) -> SafeString:
    """The lens against the reviewers over all decisions, with a link to any window."""
    (f,) = lens_figures(Window(), lens=lens)
    overall = f.overall
    kappa = overall.kappa
    kappa_text = (
        f"{kappa.value:.3f} (95 % interval {kappa.low:.2f} to {kappa.high:.2f})"
        if kappa.value is not None
        else f"— ({kappa.reason_text})"
    )
    link = (
        reverse("proposal_list") + "?" + urlencode({"agreement_lens": lens.pk, "cell": "labelled"})
    )
    standing = lens_standing(
        kappa,
        floor=f.floor.floor if f.floor else DEFAULT_FLOOR,
        drifting=f.drifting,
        rolling=f.floor.last_kappa if f.floor else None,
        window=f.floor.window if f.floor else DEFAULT_WINDOW,
    )
    flag = (
        format_html(
            '<p class="errornote" data-drifting="{}">Below its agreement floor: kappa {} over '
            "its last {} adjudications, floor {}.</p>",
            lens.name,
            f"{f.floor.last_kappa:.3f}",
            f.floor.window,
            f.floor.floor,
        )
        if f.drifting
        else ""
    )
    return format_html(
        '{}<p data-standing="{}"><strong>{}</strong>: {}</p><p>Over all decisions to date: '
        '<a href="{}">{} proposals</a> decided by a reviewer ({} escalations, {} audits). '
        "Agreement {}; Cohen's kappa {}; true-pass rate {}, true-fail rate {}. "
        'By window and week: <a href="{}">lenses against the reviewers</a>. '
        'Claims marked incorrect: {}. <a href="{}">Its agreement floor</a>.</p>',
        flag,
        standing.level,
        standing.label,
        standing.why,
        link,
        overall.n,
        f.escalations,
        f.audits,
        _pct(overall.agreement),
        kappa_text,
        _pct(overall.true_pass_rate),
        _pct(overall.true_fail_rate),
        reverse("dashboard_lenses"),
        f"{_pct(f.claims_marked_incorrect)} of {f.claims_marked} marked"
        if f.claims_marked
        else f"— ({f.claims_marked_incorrect_reason})",
        reverse("admin:calibration_lensfloor_changelist") + "?" + urlencode({"q": lens.name}),
    )


def panel_calibration_html(panel: Panel) -> SafeString:
    """The panel's pairs of lenses that fail together, and its audits overturned."""
    pairs = pair_co_errors(Window(), panel_id=panel.pk)
    audits = [a for a in panel_audits(Window()) if a.panel_id == panel.pk]
    flagged = [p for p in pairs if p.fail_together]
    pair_rows = format_html_join(
        "",
        '<li data-fail-together="{}|{}"><strong>These lenses fail together:</strong> {} × {}: '
        'both wrong on <a href="{}">{}</a> of {} decided, where independence predicts {} '
        "({} wrong on {}, {} on {}; all decisions to date).</li>",
        (
            (
                p.first,
                p.second,
                p.first,
                p.second,
                reverse("proposal_list")
                + "?"
                + urlencode(
                    {
                        "panel": panel.pk,
                        "agreement_lens": p.first_id,
                        "agreement_lens2": p.second_id,
                    }
                ),
                p.errors.both_wrong,
                p.errors.items,
                f"{p.errors.expected_both:.1f}",
                p.first,
                p.errors.first_wrong,
                p.second,
                p.errors.second_wrong,
            )
            for p in flagged
        ),
    )
    audit = audits[0] if audits else None
    audit_text = (
        format_html(
            '{} audited automatic decisions, <a href="{}">{}</a> overturned ({}; all decisions '
            "to date).",
            audit.audits,
            reverse("proposal_list")
            + "?"
            + urlencode({"panel": panel.pk, "audited": "overturned"}),
            audit.overturned,
            _pct(audit.overturned_rate),
        )
        if audit
        else "No audited automatic decision yet."
    )
    pairs_text = (
        format_html("<ul>{}</ul>", pair_rows)
        if flagged
        else format_html(
            "<p>No pair of its lenses errs together beyond chance ({} pair{}, all decisions to "
            "date).</p>",
            len(pairs),
            "" if len(pairs) == 1 else "s",
        )
    )
    return format_html("{}<p>{}</p>", pairs_text, audit_text)
