"""The first page: the latest run of each project, with its results, server-rendered; commits linked to the
project's forge wherever they are shown; the compare page's run search and shortcuts."""

import json
import re

import pytest
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.db import connection

from results import comparisons, presentation
from results.models import Project, Revision, Run
from tests.factories import ProjectFactory, UserFactory, posted_run, run_document

pytestmark = pytest.mark.django_db


def post(api, document):
    response = api.post("/api/v1/runs", data=json.dumps(document), content_type="application/json")
    assert response.status_code == 201, response.content


def test_the_home_page_shows_the_latest_run_of_each_project(api):
    older = run_document(project="Alpha", commit="1" * 40)
    older["started_at"] = "2026-11-01T02:00:00Z"
    post(api, older)
    post(api, run_document(project="Alpha", commit="2" * 40))
    post(api, run_document(project="Beta", commit="3" * 40))
    ProjectFactory(name="Gamma")

    page = Client().get("/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "Alpha" in html and "Beta" in html and "Gamma" in html
    assert "2222222222" in html and "1111111111" not in html
    assert "No nightly runs yet:" in html
    assert "sha256" in html and "MB/s" in html


def test_the_home_page_issues_a_fixed_number_of_queries(api):
    for index in range(6):
        post(api, run_document(project=f"P{index}", commit=f"{index:040d}"))
    with CaptureQueriesContext(connection) as few:
        Client().get("/")
    for index in range(6, 12):
        post(api, run_document(project=f"P{index}", commit=f"{index:040d}"))
    with CaptureQueriesContext(connection) as many:
        Client().get("/")

    assert len(many) == len(few)


def test_benchmark_names_are_escaped(api):
    post(api, run_document(results=[{"benchmark": "<script>alert(1)</script>", "samples": [1.0, 1.1, 0.9]}]))

    html = Client().get("/").content.decode()

    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_anonymous_visitors_are_sent_to_log_in_when_reading_is_not_public(settings):
    settings.PILOTWEB_PUBLIC_READ = False

    response = Client().get("/")

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_user_can_log_in_and_out(user):
    client = Client()
    response = client.post("/accounts/login/", {"username": user.username, "password": "correct horse battery staple"})
    assert response.status_code == 302
    assert user.username in client.get("/").content.decode()

    client.post("/accounts/logout/")
    assert "Log in" in client.get("/").content.decode()


# Commits link to the project's forge.

HEAD, BASE = "c" * 40, "b" * 40


@pytest.mark.parametrize(("repository", "template", "commit_url", "compare_url"), [
    ("https://github.com/acme/tool", "",
     "https://github.com/acme/tool/commit/abc123", "https://github.com/acme/tool/compare/0f0f...abc123"),
    ("git@github.com:acme/tool.git", "",
     "https://github.com/acme/tool/commit/abc123", "https://github.com/acme/tool/compare/0f0f...abc123"),
    ("https://ci-token:secret@github.com/acme/tool/", "",
     "https://github.com/acme/tool/commit/abc123", "https://github.com/acme/tool/compare/0f0f...abc123"),
    ("https://gitlab.example.org/group/tool.git", "", "https://gitlab.example.org/group/tool/-/commit/abc123",
     "https://gitlab.example.org/group/tool/-/compare/0f0f...abc123"),
    ("https://gitea.example.org/acme/tool", "",
     "https://gitea.example.org/acme/tool/commit/abc123", "https://gitea.example.org/acme/tool/compare/0f0f...abc123"),
    ("https://codeberg.org/acme/tool", "",
     "https://codeberg.org/acme/tool/commit/abc123", "https://codeberg.org/acme/tool/compare/0f0f...abc123"),
    # The project's template wins over the host (it names no compare page: the host's is kept).
    ("https://github.com/acme/tool", "https://cgit.example.org/tool/commit/?id={commit}",
     "https://cgit.example.org/tool/commit/?id=abc123", "https://github.com/acme/tool/compare/0f0f...abc123"),
    ("", "https://cgit.example.org/tool/commit/?id={commit}", "https://cgit.example.org/tool/commit/?id=abc123", None),
    ("https://hg.example.org/tool", "", None, None),
    ("https://github.com/", "", None, None),
    ("javascript:alert(1)//github.com/acme/tool", "javascript:alert('{commit}')", None, None),
])
def test_a_commit_links_to_its_forge_by_host_or_by_the_projects_template(repository, template, commit_url,
                                                                         compare_url):
    assert presentation.commit_url("abc123", repository_url=repository, template=template) == commit_url
    assert presentation.compare_commits_url("0f0f", "abc123", repository_url=repository) == compare_url


def test_a_commit_url_template_must_be_an_http_address_with_the_placeholder():
    from django.core.exceptions import ValidationError

    project = ProjectFactory(commit_url_template="https://cgit.example.org/tool/commit/?id={commit}")
    project.full_clean()
    for wrong in ("https://cgit.example.org/tool/commit/", "javascript:alert('{commit}')"):
        project.commit_url_template = wrong
        with pytest.raises(ValidationError, match="containing {commit}"):
            project.full_clean()


def test_staff_set_the_repository_and_the_commit_url_template_in_the_admin():
    project = ProjectFactory()
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    url = f"/admin/results/project/{project.pk}/change/"
    fields = {"name": project.name, "slug": project.slug, "default_branch": "main", "history_size": 10,
              "webhook_format": "json", "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0"}

    assert 'name="commit_url_template"' in client.get(url).content.decode()
    refused = client.post(url, {**fields, "commit_url_template": "https://cgit.example.org/tool/"})
    assert refused.status_code == 200 and "containing {commit}" in refused.content.decode()
    saved = client.post(url, {**fields, "repository_url": "github.com/acme/tool",
                              "commit_url_template": "https://cgit.example.org/tool/commit/?id={commit}"})
    assert saved.status_code == 302
    project.refresh_from_db()
    assert (project.repository_url, project.commit_url_template) == (
        "https://github.com/acme/tool", "https://cgit.example.org/tool/commit/?id={commit}")


def pull_request_with_author() -> Run:
    """A pull request (head cccc…, by Ada, "Speed up the sort") against its base bbbb…, compared."""
    posted_run(0, {"sort": 1.0}, sd=0.002, commit=BASE)
    head = posted_run(1, {"sort": 1.0}, sd=0.002, kind="pr", branch="feature", commit=HEAD, base_commit=BASE,
                      pull_request=7)
    comparisons.compare_run(run_id=head.pk)
    Revision.objects.filter(commit=HEAD).update(author="Ada Lovelace", message="Speed up the sort\n\nThe long story.")
    return head


def commit_link(url: str, commit: str) -> str:
    return f'<a class="commit" href="{url}" rel="noreferrer"><code title="{commit}">{commit[:12]}</code></a>'


def test_commits_link_to_the_forge_with_author_and_subject_on_the_run_and_pr_pages():
    head = pull_request_with_author()
    base = Run.objects.get(revision__commit=BASE)
    Project.objects.update(repository_url="https://gitlab.example.org/acme/tool")
    forge = "https://gitlab.example.org/acme/tool/-/commit/"

    for url in (f"/runs/{head.pk}/", f"/runs/{head.pk}/pr/"):
        html = Client().get(url).content.decode()
        assert commit_link(forge + HEAD, HEAD) in html, url
        assert commit_link(forge + BASE, BASE) in html, url
        assert "“Speed up the sort” by Ada Lovelace" in html and 'title="Speed up the sort' in html
        assert "The long story." not in html.replace('title="Speed up the sort\n\nThe long story."', "")
    html = Client().get(f"/compare/?baseline={base.pk}&candidate={head.pk}").content.decode()
    assert commit_link(forge + BASE, BASE) in html and commit_link(forge + HEAD, HEAD) in html


def test_the_projects_template_wins_and_a_commit_without_an_address_is_plain_code():
    head = pull_request_with_author()
    Project.objects.update(repository_url="https://github.com/acme/tool",
                           commit_url_template="https://cgit.example.org/tool/commit/?id={commit}")
    html = Client().get(f"/runs/{head.pk}/pr/").content.decode()
    assert commit_link(f"https://cgit.example.org/tool/commit/?id={HEAD}", HEAD) in html

    Project.objects.update(repository_url="https://hg.example.org/tool", commit_url_template="")
    html = Client().get(f"/runs/{head.pk}/pr/").content.decode()
    assert f'<code title="{HEAD}">{HEAD[:12]}</code>' in html and 'class="commit"' not in html


# The compare page: finding runs, and the shortcuts.

def test_compare_finds_runs_by_commit_prefix_or_branch_and_keeps_the_search_in_the_permalink():
    on_main = posted_run(0, {"sort": 1.0}, commit="abc1" + "0" * 36)
    on_feature = posted_run(1, {"sort": 1.0}, branch="feature/faster-sort", commit="def2" + "0" * 36)
    other = posted_run(2, {"sort": 1.0}, commit="9" * 40)

    def listed(query: dict) -> set[int]:
        html = Client().get("/compare/", query).content.decode()
        return {int(pk) for pk in re.findall(r'<option value="(\d+)"', html)}

    assert listed({}) == {on_main.pk, on_feature.pk, other.pk}
    assert listed({"search": "ABC1"}) == {on_main.pk}
    assert listed({"search": "faster"}) == {on_feature.pk}
    # The chosen runs stay in the pickers, selected, whatever the search.
    html = Client().get("/compare/", {"search": "faster", "baseline": other.pk}).content.decode()
    assert f'<option value="{other.pk}" selected>' in html
    assert "1 run whose commit starts with “faster” or whose branch contains it, besides the chosen ones." in html
    assert '<input type="hidden" name="search" value="faster">' in html
    too_long = Client().get("/compare/", {"search": "x" * 101})
    assert too_long.status_code == 200 and "at most 100 characters" in too_long.content.decode()


def test_the_shortcuts_compare_a_run_with_tonights_baseline_and_a_pull_request_with_its_base():
    nights = [posted_run(night, {"sort": 1.0}, sd=0.002) for night in range(3)]
    posted_run(2.5, {"sort": 1.0}, sd=0.002, seed=25, branch="feature", commit="f" * 40)  # not the default branch
    posted_run(2.6, {"sort": 1.0}, sd=0.002, seed=26, commit="e" * 40, machine="bench-2")  # another machine
    head = posted_run(3, {"sort": 1.1}, sd=0.002, kind="pr", branch="feature", commit=HEAD,
                      base_commit=f"{1:040x}", pull_request=7)
    client = Client()

    nightly = client.get("/compare/", {"candidate": head.pk, "against": "nightly", "search": "ff"})
    assert nightly.status_code == 302
    assert nightly["Location"] == f"/compare/?candidate={head.pk}&search=ff&baseline={nights[2].pk}"
    base = client.get("/compare/", {"candidate": head.pk, "against": "base"})
    assert base.status_code == 302 and base["Location"] == f"/compare/?candidate={head.pk}&baseline={nights[1].pk}"
    html = client.get(base["Location"]).content.decode()
    assert f"Run #{head.pk} against #{nights[1].pk}" in html and "against its base</a>" in html

    first = client.get("/compare/", {"candidate": nights[0].pk, "against": "nightly"})
    assert first.status_code == 404
    assert f"No nightly run of main on bench-1 started before run #{nights[0].pk} measured any of its" \
        in first.content.decode()
    not_a_pull_request = client.get("/compare/", {"candidate": nights[1].pk, "against": "base"})
    assert not_a_pull_request.status_code == 400
    assert "has no base to compare with" in not_a_pull_request.content.decode()
    assert client.get("/compare/", {"candidate": 9999, "against": "nightly"}).status_code == 404
    assert client.get("/compare/", {"candidate": head.pk, "against": "yesterday"}).status_code == 200

    # The pages link to the baseline the shortcut would find, and only where there is one.
    for url in (f"/runs/{head.pk}/", f"/runs/{head.pk}/pr/"):
        html = client.get(url).content.decode()
        assert f'href="/compare/?baseline={nights[2].pk}&amp;candidate={head.pk}"' in html, url
        assert f'href="/compare/?candidate={head.pk}&amp;against=base"' in html, url
    html = client.get(f"/runs/{nights[2].pk}/").content.decode()
    assert f'href="/compare/?baseline={nights[1].pk}&amp;candidate={nights[2].pk}"' in html
    assert "against=base" not in html
    html = client.get(f"/runs/{nights[0].pk}/").content.decode()
    assert "tonight&#x27;s baseline</a>" not in html and "compare-shortcuts" not in html
    assert f"No nightly run of main on bench-1 started before run #{nights[0].pk}" in html
