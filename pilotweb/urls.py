from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from results.api import api
from results.pr_api import router as pull_request_router
from runner.api import router as runner_router
from runner.views import machines

api.add_router("/", runner_router)
api.add_router("/", pull_request_router)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("jobs/", include("runner.urls")),
    path("machines/", machines, name="machines"),
    path("", include("results.urls")),
]
