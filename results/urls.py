from django.urls import path

from .views import nightly

app_name = "results"

urlpatterns = [
    path("", nightly.home, name="home"),
]
