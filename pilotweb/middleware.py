"""Project-wide middleware."""

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

# Seconds a client is asked to wait when the database is busy.
RETRY_AFTER_SECONDS = 5


class DatabaseBusyMiddleware:
    """A database that stays locked past its busy timeout (SQLite under a long write) is a temporary
    condition: answer 503 with ``Retry-After`` instead of a 500 with a traceback."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError) or "locked" not in str(exception).lower():
            return None
        detail = "The database is busy; retry in a few seconds."
        if request.path.startswith("/api/"):
            response = JsonResponse({"detail": detail, "errors": []}, status=503)
        else:
            response = HttpResponse(detail, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response


class ApiErrorBodyMiddleware:
    """Every error the API answers has its one body, ``{"detail": …, "errors": […]}``: also those made before
    or after its views, which answer the rest themselves: Django's 404 for an address the API does not have,
    the 405 of a method a path does not take, and the 500 of an unexpected failure (logged and reported as
    Django does; only its page is replaced)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (response.status_code < 400 or not request.path.startswith("/api/")
                or response.get("Content-Type", "").startswith("application/json")):
            return response
        if response.status_code == 404:
            detail = f"The API has no address {request.path}; its operations are listed at /api/v1/docs."
        elif response.status_code == 405:
            detail = f"{request.method} is not allowed at {request.path}; it takes {response.get('Allow', 'none')}."
        else:
            detail = f"{response.reason_phrase}."
        replaced = JsonResponse({"detail": detail, "errors": []}, status=response.status_code)
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                replaced[header] = response[header]
        return replaced


class NulInQueryMiddleware:
    """A query parameter holding a NUL character is a 400: no field of ours can hold one, and PostgreSQL
    refuses it in a query (a filter such as ``?machine=%00`` was a 500 there). Form fields refuse it
    already (Django's forms), JSON bodies where they are parsed."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                detail = f"The query parameter {key.replace(chr(0), '?')!r} holds a NUL character (%00)."
                if request.path.startswith("/api/"):
                    return JsonResponse({"detail": detail, "errors": [{"field": key.replace(chr(0), "?"),
                                                                       "message": "holds a NUL character"}]},
                                        status=400)
                return HttpResponse(detail, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
