"""Who may see the pages: decorators for views (the API has its own authentication classes)."""

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse


def can_read(request: HttpRequest) -> bool:
    """Anyone when ``PILOTWEB_PUBLIC_READ`` is on, else logged-in users."""
    return settings.PILOTWEB_PUBLIC_READ or request.user.is_authenticated


def readable(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page anyone who may read sees; others are sent to log in."""
    @wraps(view)
    def guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not can_read(request):
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return guarded


def staff_only(message: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A page for staff: anonymous visitors are sent to log in, other users get a 403 saying ``message``."""
    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not request.user.is_staff:
                raise PermissionDenied(message)
            return view(request, *args, **kwargs)

        return guarded

    return decorate
