from django.contrib.auth import views as auth_views
from django.urls import path

from . import notification_views, proposal_views, staff_views, token_views, views

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="registration/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.inbox, name="inbox"),
    path("proposals", views.proposal_list, name="proposal_list"),
    path("proposals/<int:pk>", proposal_views.proposal_detail, name="proposal_detail"),
    path("proposals/<int:pk>/progress", proposal_views.proposal_progress, name="proposal_progress"),
    path(
        "escalations/<int:pk>/claim",
        proposal_views.escalation_claim_view,
        name="escalation_claim",
    ),
    path(
        "escalations/<int:pk>/release",
        proposal_views.escalation_release_view,
        name="escalation_release",
    ),
    path(
        "escalations/<int:pk>/decide",
        proposal_views.escalation_decide_view,
        name="escalation_decide",
    ),
    path(
        "escalations/<int:pk>/heartbeat",
        proposal_views.escalation_heartbeat_view,
        name="escalation_heartbeat",
    ),
    path(
        "escalations/<int:pk>/reassign",
        staff_views.escalation_reassign_view,
        name="escalation_reassign",
    ),
    path(
        "escalations/<int:pk>/assign",
        staff_views.escalation_assign_view,
        name="escalation_assign",
    ),
    path("escalations/next", proposal_views.escalation_next_view, name="escalation_next"),
    path("decisions", views.decision_list, name="decision_list"),
    path("tokens", token_views.my_tokens, name="my_tokens"),
    path("settings/notifications", notification_views.my_notifications, name="my_notifications"),
    path("progress", token_views.my_progress, name="my_progress"),
    path("tokens/<int:pk>/revoke", token_views.my_token_revoke, name="my_token_revoke"),
    path("decisions/<int:pk>/verify", views.decision_verify, name="decision_verify"),
]
