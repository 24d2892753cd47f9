"""The versioned JSON API's framework, ``/api/v1/``, shared by the apps that add routes to it: the NinjaAPI, its
authentication (a per-user token; reads also a logged-in session, or nobody when ``PILOTWEB_PUBLIC_READ`` is on), the
strict JSON parser, the one error shape with its handlers, and bounded pagination. Results' endpoints are
:mod:`results.api` and :mod:`results.pr_api`; the runner's, :mod:`runner.api`."""

import re
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.pagination import LimitOffsetPagination
from ninja.parser import Parser
from ninja.security import HttpBearer, SessionAuth
from pydantic import Field

from . import json_input, services
from .ingest import unstorable_text
from .models import ApiToken
from .schemas import INT32_MAX, ErrorOut, describe_errors


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Any:
        row = (
            ApiToken.objects.select_related("user")
            .filter(digest=services.token_digest(token), revoked=False, user__is_active=True)
            .first()
        )
        if row is None:
            return None
        services.touch_api_token(token=row)
        request.user, request.api_token = row.user, row
        return row.user


Found = TypeVar("Found")


def or_404(find: Callable[[], Found | None], missing: str, *,
           absent: type[ObjectDoesNotExist] | tuple[type[ObjectDoesNotExist], ...] = ()) -> Found:
    """What `find` returns (a query's ``first()``, or a selector that raises `absent`, the model's DoesNotExist,
    where what it was asked for is not there or not the requester's to read), or a 404 saying `missing` where it
    finds nothing. Only `absent` is caught: another model's DoesNotExist raised inside is a fault, not a 404."""
    try:
        found = find()
    except absent:
        found = None
    if found is None:
        raise Http404(missing)
    return found


def request_token(request: HttpRequest) -> ApiToken | None:
    """The API token the request was authenticated with; None for a browser session or nobody."""
    return getattr(request, "api_token", None)


class LoggedInSession(SessionAuth):
    """A logged-in browser session, CSRF-checked. A request from nobody is unauthenticated (401), not a
    CSRF failure: the check only matters for a session that could authenticate."""

    def _get_key(self, request: HttpRequest) -> str | None:
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)


def public_read(request: HttpRequest) -> Any:
    return request.user if settings.PILOTWEB_PUBLIC_READ else None


READ_AUTH = [TokenAuth(), LoggedInSession(), public_read]
WRITE_AUTH = [TokenAuth(), LoggedInSession()]

# Escapes that can decode to text no database stores (a surrogate, NUL): only a body holding one needs the
# full check.
UNSTORABLE_ESCAPE = re.compile(rb"\\u(?:[dD][89a-fA-F]|0000)")


class StrictJSONParser(Parser):
    """Nesting bounded before parsing and integers while (:func:`results.json_input.loads`); no unpaired
    surrogate and no NUL in text, which no database stores: refused before anything reaches a model.
    (Non-finite and out-of-range numbers are refused by the schemas, which name the field.)"""

    def parse_body(self, request: HttpRequest) -> Any:
        body = request.body
        if not body.strip():
            # No body at all is an empty object: an endpoint whose body is optional takes it, and one that
            # needs fields names them (422) instead of failing to parse nothing.
            return {}
        data = json_input.loads(body)
        if UNSTORABLE_ESCAPE.search(body):
            problem = unstorable_text(data)
            if problem is not None:
                raise ValueError(problem)
        return data


api = NinjaAPI(
    title="Pilot Web API",
    version="1",
    description="Ingest benchmark runs and read results, series and comparisons.",
    urls_namespace="api-v1",
    auth=TokenAuth(),
    parser=StrictJSONParser(),
)


def error_body(detail: str, errors: list[dict] | None = None) -> dict:
    """The API's one error shape: a one-line ``detail`` and the ``errors`` by field."""
    return {"detail": detail, "errors": errors or []}


def refusals(*statuses: int) -> dict[int, type[ErrorOut]]:
    """An operation's error responses for its OpenAPI description, every one in the API's one error shape
    (:class:`ErrorOut`), with the 500 any operation may answer: 400 a body or query it cannot read, 401 no
    credentials, 403 not allowed (or a session without its CSRF token), 404 an id that names nothing, 409 a
    conflict with what is stored, 413 a body over the size limit, 422 a field refused."""
    return {status: ErrorOut for status in (*statuses, 500)}


READ_REFUSALS = refusals(400, 401, 422)
"""A list's: a query it cannot read or refuses, and no credentials where reads are not public."""


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, error: HttpError):
    # ninja says only "Cannot parse request body" outside DEBUG; the reason helps the sender and reveals nothing.
    detail = str(error)
    if isinstance(error.__cause__, ValueError):
        detail = f"{detail}: {error.__cause__}"
    return api.create_response(request, error_body(detail), status=error.status_code)


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, error: Http404):
    return api.create_response(request, error_body(str(error) or "Not found."), status=404)


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, error: RequestDataTooBig):
    return api.create_response(request, error_body(
        f"The request body exceeds the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes "
        "(PILOTWEB_MAX_UPLOAD_BYTES)."), status=413)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, error: ValidationError):
    return api.create_response(request, describe_errors(error.errors), status=422)


@api.exception_handler(PermissionDenied)
def on_permission_denied(request: HttpRequest, error: PermissionDenied):
    return api.create_response(request, error_body(str(error) or "Permission denied."), status=403)


@api.exception_handler(DjangoValidationError)
def on_model_validation_error(request: HttpRequest, error: DjangoValidationError):
    """A service's refusal (model validation) as the API's error body, by field."""
    by_field = error.message_dict if hasattr(error, "error_dict") else {"body": error.messages}
    errors = [{"field": field, "message": message} for field, messages in by_field.items() for message in messages]
    detail = "; ".join(f"{item['field']}: {item['message']}" for item in errors[:5])
    return api.create_response(request, error_body(detail, errors), status=422)


@api.exception_handler(AuthenticationError)
def on_unauthenticated(request: HttpRequest, error: AuthenticationError):
    sent = request.headers.get("Authorization", "")
    if sent.lower().startswith("bearer "):
        # A token was sent, but no live token has it: say so, not that none was sent.
        detail = ("Invalid token: no active API token matches the one sent (revoked, mistyped, of another "
                  "server, or its user deactivated). Create one with 'manage.py create_api_token' or in the admin.")
        response = api.create_response(request, error_body(detail), status=401)
        response["WWW-Authenticate"] = 'Bearer error="invalid_token"'
        return response
    response = api.create_response(
        request, error_body("Authentication required: send 'Authorization: Bearer <token>'."), status=401)
    response["WWW-Authenticate"] = "Bearer"
    return response


class Pages(LimitOffsetPagination):
    """Limit and offset, bounded: an offset past 64 bits overflowed inside the database driver."""

    class Input(Schema):
        limit: int = Field(100, ge=1, le=1000)
        offset: int = Field(0, ge=0, le=INT32_MAX)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_limit=1000, **kwargs)


class PageOf:
    """A queryset (or a list) whose rows become response bodies only on the page the paginator slices out of
    it (converting every row first made a list endpoint cost grow with the table); ``convert`` takes the
    page's rows at once, so what it reads for them it reads in one query."""

    def __init__(self, rows, convert) -> None:
        self.rows, self.convert = rows, convert

    def all(self) -> "PageOf":
        return self

    def count(self) -> int:
        return len(self.rows) if isinstance(self.rows, list) else self.rows.count()

    def __getitem__(self, window: slice) -> list:
        return self.convert(list(self.rows[window]))
