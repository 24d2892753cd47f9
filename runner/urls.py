from django.urls import path

from results import converters  # noqa: F401  (registers the "id" converter)

from . import views

app_name = "runner"

urlpatterns = [
    path("", views.job_list, name="jobs"),
    path("new/", views.job_create, name="job_create"),
    path("command-preview/", views.command_preview_fragment, name="command_preview"),
    path("<id:job_id>/edit/", views.job_edit, name="job_edit"),
    path("<id:job_id>/run/", views.job_run, name="job_run"),
    path("sessions/<id:session_id>/", views.session_detail, name="session"),
    path("sessions/<id:session_id>/rounds/", views.session_rounds, name="session_rounds"),
    path("sessions/<id:session_id>/cancel/", views.session_cancel, name="session_cancel"),
    path("bisections/start/", views.bisection_start, name="bisection_start"),
    path("bisections/<id:bisection_id>/cancel/", views.bisection_cancel, name="bisection_cancel"),
]
