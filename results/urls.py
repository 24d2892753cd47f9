from django.urls import path

from .views import alerts as alert_views
from .views import history
from .views import nightly

app_name = "results"

urlpatterns = [
    path("", nightly.home, name="home"),
    path("alerts/", alert_views.alerts, name="alerts"),
    path("compare/", nightly.compare, name="compare"),
    path("runs/<int:run_id>/pr/", nightly.pr_review, name="pr_review"),
    path("history/<int:metric_id>/", history.history, name="history"),
    path("runs/<int:run_id>/", history.run, name="run"),
    path("machines/", history.machines, name="machines"),
]
