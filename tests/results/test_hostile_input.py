"""What an attacker posted that once answered 500 or took a page down (issue 28): dates at the ends of the
calendar, JSON nested hundreds of levels deep, integers of hundreds of digits, names that start new lines, the
system's queue names and branch names git refuses. Each is a 4xx naming the field, and changes nothing; a row
stored before the rules took the pages down for nobody."""

import json
from datetime import UTC, datetime

import pytest
from django.test import Client

from results import access, reports, selectors
from results.ingest import ImportFormatError, import_document
from results.models import Machine, Run
from tests.factories import ComparisonFactory, ResultFactory, RunFactory, run_document
from tests.results.test_bad_input import stored_rows

pytestmark = pytest.mark.django_db

HUGE = 10**400


def nested(depth: int, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def post(client: Client, document) -> tuple[int, list[str], str]:
    body = document if isinstance(document, str | bytes) else json.dumps(document)
    response = client.post("/api/v1/runs", data=body, content_type="application/json")
    reply = response.json()
    return response.status_code, [error["field"] for error in reply.get("errors", [])], reply.get("detail", "")


@pytest.mark.parametrize("moment", ["9999-12-31T12:00:00Z", "0001-01-01T12:00:00Z", "1969-12-31T23:59:59Z",
                                    "2100-01-01T00:00:00Z"])
@pytest.mark.parametrize("field", ["started_at", "finished_at"])
def test_run_times_outside_1970_to_2100_are_a_422_naming_the_field(served_api, moment, field):
    document = run_document()
    document.pop("started_at")
    document[field] = moment
    before = stored_rows()

    status, fields, detail = post(served_api, document)

    assert status == 422 and fields == [field] and "1970-01-01 up to 2100-01-01" in detail
    assert stored_rows() == before


@pytest.mark.parametrize("moment", [datetime(9999, 12, 31, 23, 0, tzinfo=UTC), datetime(1, 1, 1, 0, 30, tzinfo=UTC)])
def test_every_page_answers_whatever_date_a_stored_run_has(moment):
    result = ResultFactory(run=RunFactory(started_at=moment))
    client = Client(raise_request_exception=False)

    pages = ["/", "/?format=json", "/runs/", "/alerts/", "/machines/", f"/runs/{result.run_id}/",
             f"/history/{result.metric_id}/", "/api/v1/runs"]

    assert {page: client.get(page).status_code for page in pages} == dict.fromkeys(pages, 200)


@pytest.mark.parametrize("depth", [65, 256, 950, 5000])
def test_a_body_nested_deeper_than_64_levels_is_refused_before_it_is_parsed(served_api, depth):
    before = stored_rows()

    status, _, detail = post(served_api, "[" * depth + "]" * depth)

    assert status == 400 and f"nested {depth} levels deep; at most 64" in detail
    assert stored_rows() == before


@pytest.mark.parametrize("where", ["results.0.metadata", "environment", "machine.hardware"])
@pytest.mark.parametrize("depth", [17, 60])
def test_free_form_fields_nested_deeper_than_16_levels_are_a_422_naming_the_field(served_api, where, depth):
    document = run_document()
    target = document
    *parents, last = where.split(".")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[last] = {"deep": nested(depth - 1)}
    before = stored_rows()

    status, fields, detail = post(served_api, document)

    assert status == 422 and "nested more than 16 levels deep" in detail
    assert fields == [where.replace(".0.", "[0].")]
    assert stored_rows() == before


@pytest.mark.parametrize("number", [HUGE, -HUGE, "1e400"])
@pytest.mark.parametrize("field", ["results.0.summary.mean", "results.0.summary.variance", "results.0.summary.n",
                                   "results.0.summary.subsession_size", "results.0.warmup_removed",
                                   "results.0.confidence_level", "machine.cores", "machine.memory_bytes",
                                   "revision.pull_request", "results.0.metadata.x"])
def test_numbers_of_hundreds_of_digits_are_a_422_naming_the_field(served_api, number, field):
    document = run_document(results=[{"benchmark": "parse", "summary": {"mean": 1.0, "subsession_size": 1,
                                                                        "variance": 0.01, "n": 10}}])
    document["revision"]["pull_request"] = 1
    target = document
    *parents, last = field.split(".")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
    target[last] = "@NUMBER@"
    body = json.dumps(document).replace('"@NUMBER@"', str(number))
    before = stored_rows()

    status, fields, _ = post(served_api, body)

    assert status == 422 and fields == [field.replace(".0.", "[0].").replace(".x", "")]
    assert stored_rows() == before


@pytest.mark.parametrize(("path", "value"), [
    ("project.name", "demo\nlink"), ("project.name", "demo\u2028x"), ("machine.name", "bench\r\n# heading"),
    ("machine.hostname", "host\tname"), ("machine.cpu_model", "cpu\x1b[31m"), ("results.0.benchmark", "sort\n# Pwned"),
    ("results.0.benchmark", "sort\u202eevil"), ("results.0.metric", "time\n@everyone"), ("results.0.unit", "s\n"),
    ("revision.branch", "main\nx"), ("revision.author", "me\n"), ("source", "tool\n"),
])
def test_names_are_one_line_of_text(served_api, path, value):
    document = run_document()
    target = document
    *parents, last = path.split(".")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[last] = value

    status, fields, _ = post(served_api, document)

    assert status == 422 and fields == [path.replace(".0.", "[0].")]


@pytest.mark.parametrize("queue", ["analysis", "celery", "bench x", "-q"])
def test_a_machine_may_not_claim_the_systems_queues(served_api, queue):
    document = run_document(machine="claimer")
    document["machine"]["queue"] = queue

    status, fields, _ = post(served_api, document)

    assert status == 422 and fields == ["machine.queue"]
    assert not Machine.objects.filter(name="claimer").exists()


@pytest.mark.parametrize("branch", ["a..b", "main@{1}", "x.lock", "feature/.hidden", "/main", "main/", "main.", "@",
                                    "a//b", "fix\u202etxt.exe", "a\u2067b", "a\u2028b", "a\x85b"])
def test_branches_git_refuses_are_refused(served_api, branch):
    status, fields, _ = post(served_api, run_document(branch=branch))

    assert status == 422 and fields == ["revision.branch"]


@pytest.mark.parametrize(("format_name", "content"), [
    ("native", "[" * 950 + "]" * 950),
    ("pyperf", '{"version": "1.0", "benchmarks": ' + "[" * 950 + "]" * 950 + "}"),
    ("google-benchmark", '{"context": {}, "benchmarks": ' + "[" * 950 + "]" * 950 + "}"),
    ("pytest-benchmark", "{" + '"a": {' * 300 + "}" * 301),
    ("hyperfine", '{"results": ' + "[" * 300 + "]" * 300 + "}"),
    ("asv", '{"results": ' + "[" * 300 + "]" * 300 + "}"),
])
def test_an_imported_file_nested_too_deep_is_refused(format_name, content):
    with pytest.raises(ImportFormatError, match="levels deep; at most 64"):
        import_document(format_name=format_name, content=content.encode(), overrides={})


@pytest.mark.parametrize(("format_name", "document", "where"), [
    ("pytest-benchmark", {"benchmarks": [{"name": "b", "stats": {"mean": 1.0, "stddev": 1e200, "rounds": 5}}],
                          "machine_info": {}}, "'stats.mean' and 'stats.stddev' must be finite numbers"),
    ("pytest-benchmark", {"benchmarks": [{"name": "b", "stats": {"data": [1, "@NUMBER@"]}}], "machine_info": {}},
     "'stats.data' must be a list of finite numbers"),
    ("hyperfine", {"results": [{"command": "sleep", "times": [0.1, "@NUMBER@"]}]}, "'times' must be a list"),
    ("google-benchmark", {"context": {}, "benchmarks": [{"name": "b", "run_name": "b", "run_type": "iteration",
                                                          "iterations": 1, "real_time": "@NUMBER@", "cpu_time": 1,
                                                          "time_unit": "ns"}]}, "not a finite number"),
    ("pyperf", {"version": "1.0", "metadata": {"unit": "second"}, "benchmarks": [
        {"metadata": {"name": "b"}, "runs": [{"values": [1.0, "@NUMBER@"]}]}]}, "must be a list of finite numbers"),
])
def test_numbers_importers_cannot_hold_are_refused_naming_where(format_name, document, where):
    content = json.dumps(document).replace('"@NUMBER@"', str(HUGE))

    with pytest.raises(ImportFormatError, match=where.replace("(", "\\(").replace("'", ".")):
        import_document(format_name=format_name, content=content.encode(), overrides={})


@pytest.mark.parametrize("value", ["Infinity", "NaN", str(HUGE), "1e400", str(-HUGE)])
@pytest.mark.parametrize("field", ["work_min", "work_max", "round_timeout", "budget_seconds", "budget_rounds",
                                   "overhead_rounds", "confidence_level", "min_round_duration", "parameters",
                                   "project", "machine"])
def test_the_job_api_refuses_numbers_out_of_range_naming_the_field(staff, value, field):
    from results import services
    from results.models import TokenScope
    from tests.factories import MachineFactory, ProjectFactory

    _, token = services.create_api_token(user=staff, name="jobs", scopes=[TokenScope.JOBS])
    client = Client(raise_request_exception=False, headers={"Authorization": f"Bearer {token}"})
    fields = {"project": ProjectFactory().pk, "name": "j", "benchmark": "sort", "machine": MachineFactory().pk,
              "workload_kind": "builtin", "builtin": "sort", field: "@NUMBER@"}
    if field == "parameters":
        fields[field] = {"seed": "@NUMBER@"}
    body = json.dumps(fields).replace('"@NUMBER@"', value)

    response = client.post("/api/v1/jobs", data=body, content_type="application/json")

    assert response.status_code == 422, response.content
    assert field in [error["field"] for error in response.json()["errors"]]


def test_names_stored_before_the_rule_cannot_inject_markdown_into_a_pull_requests_comment():
    head = ResultFactory(run=RunFactory(kind=Run.Kind.PR, machine__name="bench`\n# Owned"),
                         metric__benchmark__name="sort\n# Heading [link](https://evil.example) @alice "
                                                 "<img src=https://evil.example/t.png>")
    base = ResultFactory(run=RunFactory(project=head.run.project, machine=head.run.machine), metric=head.metric)
    ComparisonFactory(candidate=head, baseline=base, method="pairwise", verdict="regression", ratio=1.2, ci_low=1.1,
                      ci_high=1.3, pvalue=0.001, qvalue=0.001)
    Run.objects.filter(pk=head.run_id).update(compared_at=head.run.started_at)

    markdown = reports.pr_markdown(selectors.pr_review(run_id=head.run_id, viewer=access.SYSTEM))

    # Every line starts as the comment's own lines do: no name opened a heading or a list of its own.
    assert [line for line in markdown.splitlines() if line.startswith("#")] == [markdown.splitlines()[0]]
    name_cell = next(line for line in markdown.splitlines() if "Heading" in line).split(" | ")[0]
    # The name is one code span: inside it the link, the image, the HTML and the mention are plain text.
    assert name_cell.startswith("| `sort # Heading") and name_cell.endswith("`")
    assert name_cell.count("`") == 2
    assert "``bench` # Owned``" in markdown


@pytest.mark.parametrize("value", ["Infinity", str(HUGE)])
def test_a_job_edit_naming_no_possible_project_or_machine_is_a_422(staff, value):
    from results import services
    from results.models import TokenScope
    from runner import services as runner_services
    from tests.factories import MachineFactory, ProjectFactory

    job = runner_services.create_job(user=staff, project=ProjectFactory(), name="j", benchmark="sort",
                                     machine=MachineFactory(), workload_kind="builtin", builtin="sort")
    _, token = services.create_api_token(user=staff, name="jobs", scopes=[TokenScope.JOBS])
    client = Client(raise_request_exception=False, headers={"Authorization": f"Bearer {token}"})

    response = client.patch(f"/api/v1/jobs/{job.pk}", data='{"machine": -' + value + "}",
                            content_type="application/json")

    assert response.status_code == 422 and "machine" in [error["field"] for error in response.json()["errors"]]


def test_a_pull_request_with_a_zero_time_is_compared():
    """hyperfine writes 0.0 for a command too short to time: the bootstrap's replicates of equal values have no
    spread, and their infinite t values once made its interval NaN and the comparison fail."""
    from results import comparisons
    from results.ingest import import_document
    from results.schemas import RunIn
    from results import services

    def imported(times, **overrides):
        document = import_document(format_name="hyperfine", content=json.dumps(
            {"results": [{"command": "true", "times": times, "exit_codes": [0] * len(times)}]}).encode(),
            overrides={"project": {"name": "Demo"}, "machine": {"name": "ci-1"}, **overrides})
        return services.ingest_run(document=RunIn.model_validate(document), user=None).run

    imported([0.0012, 0.0011, 0.0013], revision={"commit": "a" * 7, "branch": "main"}, kind="nightly")
    head = imported([0.0, 0.0011, 0.0012], revision={"commit": "b" * 7, "branch": "feature", "pull_request": 7,
                                                     "base_commit": "a" * 7}, kind="pr")

    assert comparisons.compare_run(run_id=head.pk) > 0
    head.refresh_from_db()
    assert head.compared_at is not None


def test_an_uploader_does_not_describe_a_machine_it_did_not_make(uploader_api):
    Machine.objects.create(name="shared", queue="bench.shared", hostname="")
    document = run_document(machine="shared")
    document["machine"].update(hostname="attacker-host", os="[pwned](https://evil.example/)")

    status, _, _ = post(uploader_api, document)

    assert status == 201
    assert Machine.objects.filter(name="shared", hostname="", os="").exists()


def test_a_run_now_label_is_one_line(staff):
    from results import services
    from results.models import TokenScope
    from runner import services as runner_services
    from runner.models import Session
    from tests.factories import MachineFactory, ProjectFactory

    job = runner_services.create_job(user=staff, project=ProjectFactory(), name="j", benchmark="sort",
                                     machine=MachineFactory(), workload_kind="builtin", builtin="sort")
    _, token = services.create_api_token(user=staff, name="jobs", scopes=[TokenScope.JOBS])

    response = Client(headers={"Authorization": f"Bearer {token}"}).post(
        f"/api/v1/jobs/{job.pk}/run", data={"revisions": [{"label": "a\nb"}, {"label": "c"}]},
        content_type="application/json")

    assert response.status_code == 422 and not Session.objects.exists()
