"""``GET /api/v1/runs/{run_id}/pr-summary``: a pull-request run's review as Markdown and JSON.

Mounted on the versioned API with ``api.add_router("/", pr_api.router)``; read access as for
every other read (token, session, or anyone when ``PILOTWEB_PUBLIC_READ`` is on).
"""

from typing import Any

from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Schema

from . import reports, selectors
from .api import comparison_out
from .api_framework import READ_AUTH, or_404, refusals
from .models import Run

router = Router(tags=["pull requests"])


class PullRequestSummaryOut(Schema):
    markdown: str
    summary: dict[str, Any]
    comparisons: list[dict[str, Any]]


@router.get("/runs/{id:run_id}/pr-summary", response={200: PullRequestSummaryOut, **refusals(401, 404)}, auth=READ_AUTH,
            url_name="pr_summary",
            summary="A pull-request run against its base: Markdown for a PR comment, counts and comparisons")
def pr_summary(request: HttpRequest, run_id: int):
    review = or_404(lambda: selectors.pr_review(run_id=run_id, viewer=request.user), f"No pull-request run {run_id}.",
                    absent=Run.DoesNotExist)
    url = request.build_absolute_uri(reverse("results:pr_review", args=[run_id]))
    return {"markdown": reports.pr_markdown(review, url=url), "summary": reports.pr_summary(review),
            "comparisons": [{**comparison_out(row), "baseline": _side(row.baseline), "candidate": _side(row.candidate),
                             "bootstrap_change": row.bootstrap_change or None} for row in review.rows]}


def _side(side) -> dict[str, Any]:
    return {"mean": side.mean, "half_width": side.half_width, "n": side.n}
