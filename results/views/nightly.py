"""Server-rendered pages. Each view parses input, calls one selector, renders."""

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .. import selectors


def readable(request: HttpRequest) -> bool:
    return settings.PILOTWEB_PUBLIC_READ or request.user.is_authenticated


def home(request: HttpRequest) -> HttpResponse:
    """The latest run of each project with its results."""
    if not readable(request):
        return redirect_to_login(request.get_full_path())
    return render(request, "results/home.html", {"projects": selectors.latest_run_per_project()})
