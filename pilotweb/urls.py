from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.conf import settings
from django.http import FileResponse, HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path

from results.api import api
from results.pr_api import router as pull_request_router
from runner.api import router as runner_router
from runner.views import machines

api.add_router("/", runner_router)
api.add_router("/", pull_request_router)


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """Browsers and feed readers ask for /favicon.ico whatever the page links; resolved per request, since
    production's static names are only known once collectstatic has run (and change with each deploy, so
    the redirect is not a permanent one)."""
    return HttpResponseRedirect(static("results/favicon.svg"))


def upload_client(request: HttpRequest) -> FileResponse:
    """The CI client (``client/pilot_upload.py``, standard library only) as one file, so a CI job can fetch
    the version that matches the server it posts to."""
    return FileResponse(open(settings.BASE_DIR / "client" / "pilot_upload.py", "rb"), as_attachment=True,
                        filename="pilot_upload.py", content_type="text/x-python; charset=utf-8")


urlpatterns = [
    path("favicon.ico", favicon),
    path("client/pilot_upload.py", upload_client, name="upload_client"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("jobs/", include("runner.urls")),
    path("machines/", machines, name="machines"),
    path("", include("results.urls")),
]
