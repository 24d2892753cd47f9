"""Revision identifiers are held to a strict shape wherever they enter: the native API, the import API,
the import command, the runner's "run now" and the admin's model validation."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from results.identifiers import check_branch, check_commit
from results.models import Revision, Run
from tests.factories import RevisionFactory, run_document

DATA = Path(__file__).resolve().parents[1] / "data"

GOOD_COMMITS = ["0123456789abcdef0123456789abcdef01234567", "3f2a9c1", "v1.2.3", "refs/pull/5/head", "HEAD~1",
                "release-2.0^2", "feature/x_y+z", "a" * 64]
BAD_COMMITS = ["--upload-pack=touch pwned", "-x", "", ".hidden", "a b", "a\tb", "abc\n", "a\x00b", "a;b", "$(id)",
               "`id`", "a|b", "a:b", "a" * 65, "\u00e9t\u00e9", "\ud800", "a/../../tmp/x", "a..b", "x/.git/hooks"]
GOOD_BRANCHES = ["", "main", "release/2.0", "feature/\u00fcber", "dependabot/pip/numpy-2.4.6"]
BAD_BRANCHES = ["-evil", "--upload-pack=x", "a b", "a\nb", "a:b", "a~1", "a^", "a?", "a*", "a[", "a\\b", "b" * 201]


@pytest.mark.parametrize("value", GOOD_COMMITS)
def test_commit_hashes_tags_and_refs_are_accepted(value):
    assert check_commit(value) == value


@pytest.mark.parametrize("value", BAD_COMMITS)
def test_options_whitespace_control_and_shell_characters_are_refused_as_commits(value):
    with pytest.raises(ValueError, match="not starting with '-'"):
        check_commit(value)


@pytest.mark.parametrize("value", GOOD_BRANCHES)
def test_branch_names_are_accepted(value):
    assert check_branch(value) == value


@pytest.mark.parametrize("value", BAD_BRANCHES)
def test_bad_branch_names_are_refused(value):
    with pytest.raises(ValueError, match="not starting with '-'"):
        check_branch(value)


@pytest.mark.django_db
@pytest.mark.parametrize(("revision", "field"), [
    ({"commit": "-x"}, "revision.commit"),
    ({"commit": "a b"}, "revision.commit"),
    ({"commit": "abc", "branch": "--force"}, "revision.branch"),
    ({"commit": "abc", "base_commit": "--upload-pack=x"}, "revision.base_commit"),
])
def test_the_native_api_names_the_refused_field(api, revision, field):
    document = run_document()
    document["revision"] = revision

    response = api.post("/api/v1/runs", data=json.dumps(document), content_type="application/json")

    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == [field]
    assert not Run.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("query", "field"), [("commit=--upload-pack%3Dx", "commit"),
                                              ("commit=abc&branch=-b", "branch")])
def test_the_import_api_refuses_a_bad_commit_or_branch(api, query, field):
    response = api.post(f"/api/v1/runs/import?format=hyperfine&project=p&machine=m&{query}",
                        data=(DATA / "hyperfine.json").read_bytes(), content_type="application/json")

    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == [field]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_import_command_refuses_a_bad_commit():
    with pytest.raises(CommandError, match=r"revision\.commit"):
        call_command("import_results", str(DATA / "hyperfine.json"), "--format", "hyperfine", "--project", "p",
                     "--machine", "m", "--commit=--upload-pack=x", stdout=StringIO())
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_native_file_naming_a_bad_commit_is_refused_on_import(api, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_document(commit="-x")))

    with pytest.raises(CommandError, match=r"revision\.commit"):
        call_command("import_results", str(path), "--format", "native", stdout=StringIO())
    assert not Revision.objects.exists()


@pytest.mark.django_db
def test_the_model_validates_revisions_for_the_admin():
    revision = RevisionFactory.build(project=RevisionFactory().project, commit="--upload-pack=x", branch="-b")

    with pytest.raises(ValidationError) as raised:
        revision.full_clean()
    assert set(raised.value.message_dict) == {"commit", "branch"}
