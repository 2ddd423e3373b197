from django.urls import path

from . import exports, views

urlpatterns = [
    path("dashboard", views.dashboard, name="dashboard"),
    path("dashboard/lenses", views.lens_agreement, name="dashboard_lenses"),
    path("dashboard/guarantee", views.panel_guarantee, name="dashboard_guarantee"),
    path("exports/proposals.csv", exports.proposals_csv, name="export_proposals_csv"),
    path("exports/proposals.jsonl", exports.proposals_jsonl, name="export_proposals_jsonl"),
]
