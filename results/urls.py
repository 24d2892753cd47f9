from django.urls import path

from . import converters  # noqa: F401  (registers the "id" converter)
from .views import alerts as alert_views
from .views import history
from .views import nightly
from .views import runs
from .views import sheriff

app_name = "results"

urlpatterns = [
    path("", nightly.home, name="home"),
    path("alerts/", alert_views.alerts, name="alerts"),
    path("compare/", nightly.compare, name="compare"),
    path("runs/", runs.runs, name="runs"),
    path("projects/<slug:slug>/sheriff/", sheriff.sheriff, name="sheriff"),
    path("runs/<id:run_id>/pr/", nightly.pr_review, name="pr_review"),
    path("history/<id:metric_id>/", history.history, name="history"),
    path("runs/<id:run_id>/", history.run, name="run"),
    path("runs/<id:run_id>/metrics/<id:metric_id>/", history.run_section, name="run_section"),
]
