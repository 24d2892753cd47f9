from django.urls import path

from . import views

app_name = "runner"

urlpatterns = [
    path("", views.job_list, name="jobs"),
    path("new/", views.job_create, name="job_create"),
    path("<int:job_id>/edit/", views.job_edit, name="job_edit"),
    path("<int:job_id>/run/", views.job_run, name="job_run"),
    path("sessions/<int:session_id>/", views.session_detail, name="session"),
    path("sessions/<int:session_id>/cancel/", views.session_cancel, name="session_cancel"),
]
