"""The replay admin: plan a draft, see the calls it would make, start, follow, cancel, compare.

Every page checks the replay it names (``_replay``): a replay is seen by whoever
may view replays, or by the one who planned it if they may plan replays; starting
and cancelling likewise with the change permission.
"""

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from reviewapp.core.replay import share_text
from reviewapp.review.models import Panel, Proposal

from .forms import ReplayForm
from .models import RegressionCase, Replay, ReplayCase
from .services import (
    progress,
    regression_case_add,
    replay_cancel,
    replay_plan,
    replay_start,
)

ADMIN_JS = ("vendor/htmx.min.js", "js/htmx-csp.js")


def _owns(request, replay: Replay) -> bool:
    return replay.created_by_id == request.user.pk and request.user.has_perm("replay.add_replay")


@admin.register(Replay)
class ReplayAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "panel_name",
        "description",
        "source",
        "size",
        "status",
        "created_by",
    )
    list_filter = ("status", "source")
    search_fields = ("panel_name", "description")
    actions = ["compare"]

    def get_queryset(self, request):
        replays = super().get_queryset(request)
        if request.user.has_perm("replay.view_replay") or request.user.has_perm(
            "replay.change_replay"
        ):
            return replays
        return replays.filter(
            Q(created_by=request.user) if request.user.has_perm("replay.add_replay") else Q(pk=None)
        )

    def has_module_permission(self, request):
        return super().has_module_permission(request) or request.user.has_perm("replay.add_replay")

    def has_view_permission(self, request, obj=None):
        if super().has_view_permission(request, obj):
            return True
        if obj is None:
            return request.user.has_perm("replay.add_replay")
        return _owns(request, obj)

    def has_change_permission(self, request, obj=None):
        # Starting and cancelling: the replay's own rows are never edited by hand.
        if request.user.has_perm("replay.change_replay"):
            return True
        return obj is not None and _owns(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False  # runs are kept, so two drafts can be compared

    @admin.action(description="Compare the selected replays side by side", permissions=["view"])
    def compare(self, request, queryset):
        replays = [r for r in queryset.order_by("created_at", "id") if r.result]
        for replay in replays:  # the queryset is the visible ones; each is checked all the same
            if not self.has_view_permission(request, replay):
                raise PermissionDenied
        if len(replays) < 2:
            self.message_user(
                request, "Select at least two replays that have a result.", messages.WARNING
            )
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Replays side by side",
            "replays": replays,
        }
        return TemplateResponse(request, "admin/replay/replay/compare.html", context)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/progress/",
                view(self.progress_view),
                name="replay_replay_progress",
            ),
            path(
                "<path:object_id>/start/",
                view(self.start_view),
                name="replay_replay_start",
            ),
            path(
                "<path:object_id>/cancel/",
                view(self.cancel_view),
                name="replay_replay_cancel",
            ),
            *super().get_urls(),
        ]

    def _replay(self, request, object_id, *, change: bool = False) -> Replay:
        replay = (
            Replay.objects.filter(pk=unquote(object_id)).first()
            if str(object_id).isdigit()
            else None
        )
        if replay is None:
            if not self.has_view_permission(request):
                raise PermissionDenied
            raise Http404
        allowed = self.has_change_permission if change else self.has_view_permission
        if not allowed(request, replay):
            raise PermissionDenied
        return replay

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        asked = request.GET.get("panel", "")
        panel = Panel.objects.filter(pk=asked).first() if asked.isdigit() else None
        form = ReplayForm(
            request.POST or None,
            initial={
                "panel": asked,
                "lens": request.GET.get("lens"),
                # The panel's lenses ticked: the draft starts as the panel stands.
                "members": list(panel.lenses.all()) if panel else [],
            },
        )
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                replay = replay_plan(
                    panel=data["panel"],
                    user=request.user,
                    members=list(data["members"]) or None,
                    need=data["need"],
                    lens_changes=form.lens_changes(),
                    source=data["source"],
                    size=data["size"],
                )
            except ValidationError as exc:
                for field, errors in (
                    exc.message_dict.items()
                    if hasattr(exc, "error_dict")
                    else [(None, exc.messages)]
                ):
                    form.add_error(field if field in form.fields else None, errors)
            else:
                return HttpResponseRedirect(reverse("admin:replay_replay_change", args=[replay.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Replay a draft on decided proposals",
            "form": form,
        }
        return TemplateResponse(
            request, "admin/replay/replay/plan.html", context, status=400 if form.errors else 200
        )

    def _context(self, request, replay: Replay) -> dict:
        done, total = progress(replay)
        return {
            "replay": replay,
            "done": done,
            "total": total,
            # Fewer decided proposals than asked for: said on the page before the start.
            "short_of_asked": total < replay.size,
            "percent": round(100 * done / total) if total else 100,
            "result": replay.result,
            "result_rates": _result_rates(replay.result),
            "lens_rows": _lens_rows(replay.result),
            "detail_url": reverse("admin:replay_replay_change", args=[replay.pk]),
            "progress_url": reverse("admin:replay_replay_progress", args=[replay.pk]),
            "may_change": self.has_change_permission(request, replay),
        }

    def change_view(self, request, object_id, form_url="", extra_context=None):
        replay = self._replay(request, object_id)
        cases = ReplayCase.objects.filter(replay=replay).select_related("proposal")
        kept = set(
            RegressionCase.objects.filter(proposal_id__in=cases.values("proposal_id")).values_list(
                "proposal_id", flat=True
            )
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": str(replay),
            "cases": cases,
            "in_regression_set": kept,
            "may_add_case": request.user.has_perm("replay.add_regressioncase"),
            "js": ADMIN_JS,
            **self._context(request, replay),
        }
        return TemplateResponse(request, "admin/replay/replay/detail.html", context)

    def progress_view(self, request, object_id):
        """The htmx fragment: polls itself while the replay runs. Polled once it has ended,
        it has the page reload: the Draft column, the result and the buttons change too."""
        replay = self._replay(request, object_id)
        response = TemplateResponse(
            request, "admin/replay/replay/_progress.html", self._context(request, replay)
        )
        if request.htmx and replay.is_finished:
            response["HX-Refresh"] = "true"
        return response

    def start_view(self, request, object_id):
        replay = self._replay(request, object_id, change=True)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not replay_start(replay=replay, user=request.user):
            self.message_user(
                request,
                f"This replay is {replay.status}: it was not started again.",
                messages.WARNING,
            )
        return HttpResponseRedirect(reverse("admin:replay_replay_change", args=[replay.pk]))

    def cancel_view(self, request, object_id):
        replay = self._replay(request, object_id, change=True)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not replay_cancel(replay=replay, user=request.user):
            self.message_user(
                request, f"This replay had already ended ({replay.status}).", messages.WARNING
            )
        return HttpResponseRedirect(reverse("admin:replay_replay_change", args=[replay.pk]))


def _result_rates(result: dict | None) -> list[dict]:
    """The side-by-side rows, each count out of the proposals replayed ("16 of 41 (39 %)")."""
    if not result:
        return []
    total = result["replayed"]

    def row(key: str, label: str, count) -> dict:
        cells = [
            {
                "side": side,
                "text": share_text(count(result[side]), total),
                # The proposals behind a contradiction, linked.
                "ids": result[side]["contradictions"] if key == "contradictions" else [],
            }
            for side in ("current", "draft")
        ]
        return {"key": key, "label": label, "cells": cells}

    return [
        row("automatic", "Decided automatically", lambda side: side["automatic"]),
        row("approved", "… approved", lambda side: side["approved"]),
        row("rejected", "… rejected", lambda side: side["rejected"]),
        row("escalated", "Escalated to a reviewer", lambda side: side["escalated"]),
        row(
            "contradictions",
            "Decided automatically against the reviewer's decision",
            lambda side: len(side["contradictions"]),
        ),
    ]


def _lens_rows(result: dict | None) -> list[dict]:
    """What each lens's verdicts did, in words for the result's per-lens table."""
    rows = []
    for change in (result or {}).get("lenses", []):
        rows.append(
            {
                **change,
                "current": share_text(change["current_right"], change["current_judged"])
                if change["current_judged"]
                else "—",
                "draft": share_text(change["draft_right"], change["draft_judged"])
                if change["draft_judged"]
                else "—",
            }
        )
    return rows


@admin.register(RegressionCase)
class RegressionCaseAdmin(admin.ModelAdmin):
    list_display = ("proposal", "added_by", "added_at")
    raw_id_fields = ("proposal",)
    fields = ("proposal",)

    def get_urls(self):
        return [
            path(
                "proposals/<int:proposal_id>/add/",
                self.admin_site.admin_view(self.add_proposal_view),
                name="replay_regressioncase_add_proposal",
            ),
            *super().get_urls(),
        ]

    def save_model(self, request, obj, form, change):
        # Through the service: the same refusal (undecided) and audit entry as the button.
        form.instance = regression_case_add(proposal=obj.proposal, user=request.user)

    def add_proposal_view(self, request, proposal_id):
        """ "Add to regression set" on a decided proposal's page; back to where it was pressed."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        if request.method != "POST":  # asked after who is asking: a stranger learns nothing
            return HttpResponseNotAllowed(["POST"])
        proposal = Proposal.objects.filter(pk=proposal_id).first()
        if proposal is None:
            raise Http404
        try:
            regression_case_add(proposal=proposal, user=request.user)
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
        else:
            self.message_user(request, f"Proposal {proposal.pk} is in the regression set.")
        back = request.POST.get("next", "")
        if not back.startswith("/") or back.startswith("//"):
            back = reverse("admin:replay_regressioncase_changelist")
        return HttpResponseRedirect(back)
