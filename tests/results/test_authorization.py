"""Who may do what, as a table: every identity (anonymous, a user of no project, a viewer, an uploader, a
maintainer, staff) against every write (API, pages, admin) and the reads of a private project, on the project the
identity has its role in ("own") and on another ("other"). Both projects are private. The expected outcome of
each cell is the rule of issue 28 written out below, not derived from the code under test; a refused write
changes nothing. Runs on SQLite and again on PostgreSQL (``./pilot test``)."""

import json

import pytest
from django.test import Client

from results import services
from results.models import Alert, AlertGroup, AlertStatus, Membership, Project, Role, Run, TokenScope
from runner import services as runner_services
from runner.models import Job, Session
from tests.factories import ComparisonFactory, MachineFactory, ResultFactory, UserFactory, run_document

pytestmark = pytest.mark.django_db

IDENTITIES = ("anonymous", "outsider", "viewer", "uploader", "maintainer", "staff")
RANK = {"outsider": 0, "viewer": 1, "uploader": 2, "maintainer": 3, "staff": 4}
LEAST = {"read": "viewer", "upload": "uploader", "import": "uploader", "triage": "maintainer",
         "triage page": "maintainer", "create job": "staff", "run job": "staff", "cancel session": "staff",
         "admin": "staff"}
"""The rule: the least role each action needs in the project it acts on (staff may do everything everywhere)."""


def role_in(identity: str, target: str) -> str:
    """An identity's role in the target project: its own role in "own", none in "other" (staff: staff)."""
    return identity if target == "own" or identity == "staff" else "outsider"


def allowed(identity: str, action: str, target: str) -> bool:
    return identity != "anonymous" and RANK[role_in(identity, target)] >= RANK[LEAST[action]]


@pytest.fixture
def world(staff):
    """Two private projects with a run, an alert, a job and a queued session each; a user per role in "own"."""
    projects = {target: Project.objects.create(name=target, slug=target, private=True)
                for target in ("own", "other")}
    machine = MachineFactory(name="bench-1", queue="bench.bench-1")
    found = {"projects": projects, "runs": {}, "alerts": {}, "jobs": {}, "sessions": {}, "users": {}}
    for target, project in projects.items():
        result = ResultFactory(run__project=project, run__machine=machine, metric__benchmark__name="sort")
        comparison = ComparisonFactory(candidate=result, verdict="regression", ratio=1.2, ci_low=1.1, ci_high=1.3)
        group = AlertGroup.objects.create(run=result.run)
        found["runs"][target] = result.run
        found["alerts"][target] = Alert.objects.create(group=group, comparison=comparison, first_run=result.run)
        job = runner_services.create_job(user=staff, project=project, name="sort", benchmark="sort",
                                         machine=machine, workload_kind="builtin", builtin="sort")
        found["jobs"][target] = job
        found["sessions"][target] = Session.objects.create(job=job)
    for identity in IDENTITIES[1:]:
        # Staff's identity is a superuser: the admin asks for its own permissions besides staff status.
        user = UserFactory(username=identity, is_staff=True, is_superuser=True) if identity == "staff" \
            else UserFactory(username=identity)
        if identity in ("viewer", "uploader", "maintainer"):
            Membership.objects.create(project=projects["own"], user=user, role=Role(identity))
        found["users"][identity] = user
    return found


def api_client(world, identity: str) -> Client:
    if identity == "anonymous":
        return Client()
    _, token = services.create_api_token(user=world["users"][identity], name="every scope", scopes=TokenScope.values)
    return Client(headers={"Authorization": f"Bearer {token}"})


def page_client(world, identity: str) -> Client:
    client = Client()
    if identity != "anonymous":
        client.force_login(world["users"][identity])
    return client


def state() -> tuple:
    """What a refused write must leave as it was."""
    return (Run.objects.count(), Job.objects.count(), Session.objects.count(),
            sorted(Alert.objects.values_list("pk", "status")), sorted(Session.objects.values_list("pk", "status")))


def perform(world, identity: str, action: str, target: str):
    """Do `action` on the `target` project as `identity`; the response."""
    project, run = world["projects"][target], world["runs"][target]
    alert, job, session = world["alerts"][target], world["jobs"][target], world["sessions"][target]
    api, page = api_client(world, identity), page_client(world, identity)
    document = run_document(project=project.name, commit="b" * 40)
    document["project"]["slug"] = project.slug
    match action:
        case "read":
            return api.get(f"/api/v1/runs/{run.pk}"), page.get(f"/runs/{run.pk}/")
        case "upload":
            return api.post("/api/v1/runs", data=json.dumps(document), content_type="application/json")
        case "import":
            document.pop("project")
            return api.post(f"/api/v1/runs/import?format=native&project={project.name}",
                            data=json.dumps(document), content_type="application/json")
        case "triage":
            return api.post(f"/api/v1/alerts/{alert.pk}/status", data={"status": AlertStatus.ACKNOWLEDGED},
                            content_type="application/json")
        case "triage page":
            return page.post("/alerts/", {"alert": alert.pk, "status": AlertStatus.ACKNOWLEDGED})
        case "create job":
            return api.post("/api/v1/jobs", data={"project": project.pk, "name": "new", "benchmark": "sha",
                                                  "machine": job.machine_id, "workload_kind": "builtin",
                                                  "builtin": "sha256"}, content_type="application/json")
        case "run job":
            return api.post(f"/api/v1/jobs/{job.pk}/run", data={}, content_type="application/json")
        case "cancel session":
            return api.post(f"/api/v1/sessions/{session.pk}/cancel")
        case "admin":
            return page.get(f"/admin/results/project/{project.pk}/change/")


WRITES = {"upload": (201,), "import": (201,), "triage": (200,), "triage page": (302,), "create job": (201,),
          "run job": (201, 202), "cancel session": (200,), "admin": (200,)}


@pytest.mark.parametrize("target", ["own", "other"])
@pytest.mark.parametrize("action", list(WRITES))
@pytest.mark.parametrize("identity", IDENTITIES)
def test_each_write_is_allowed_by_the_role_in_its_project_and_a_refusal_changes_nothing(world, identity, action,
                                                                                         target):
    before = state()

    response = perform(world, identity, action, target)

    if allowed(identity, action, target):
        assert response.status_code in WRITES[action], response.content[:300]
        return
    if identity == "anonymous":
        expected = {"triage page": (302,), "admin": (302,)}.get(action, (401,))  # pages send to log in
    elif action == "admin":
        expected = (302,)  # the admin sends non-staff to its own login
    elif action in ("triage", "triage page", "run job", "cancel session") and not allowed(identity, "read", target):
        expected = (404, 403)  # what a reader may not see is not there for them (jobs: staff-only first)
    else:
        expected = (403,)
    assert response.status_code in expected, response.content[:300]
    assert state() == before


@pytest.mark.parametrize("target", ["own", "other"])
@pytest.mark.parametrize("identity", IDENTITIES)
def test_a_private_projects_runs_are_read_by_its_members_and_staff_only(world, identity, target):
    api_response, page_response = perform(world, identity, "read", target)

    readable = allowed(identity, "read", target)
    assert api_response.status_code == (200 if readable else 404 if identity != "anonymous" else 404)
    assert page_response.status_code == (200 if readable else 404)


@pytest.mark.parametrize("identity", IDENTITIES)
def test_lists_and_pickers_show_only_the_projects_one_may_read(world, identity):
    client = page_client(world, identity)

    listed = {item["slug"] for item in client.get("/api/v1/projects").json()["items"]}
    runs = {item["project"] for item in client.get("/api/v1/runs").json()["items"]}
    alerts = {item["project"] for item in client.get("/api/v1/alerts").json()["items"]}
    overview = client.get("/").content.decode()

    expected = {target for target in ("own", "other") if allowed(identity, "read", target)}
    assert listed == runs == alerts == expected
    shown = {target for target in ("own", "other") if f'href="/runs/{world["runs"][target].pk}/"' in overview}
    assert shown == expected


def test_a_token_for_one_project_writes_to_that_project_only(world):
    user = world["users"]["maintainer"]
    Membership.objects.create(project=world["projects"]["other"], user=user, role=Role.MAINTAINER)
    _, token = services.create_api_token(user=user, name="own only", project=world["projects"]["own"],
                                         scopes=TokenScope.values)
    client = Client(headers={"Authorization": f"Bearer {token}"})

    statuses = {}
    for target in ("own", "other"):
        document = run_document(project=world["projects"][target].name, commit="c" * 40)
        document["project"]["slug"] = target
        statuses[target] = client.post("/api/v1/runs", data=json.dumps(document),
                                       content_type="application/json").status_code
    triaged = client.post(f"/api/v1/alerts/{world['alerts']['other'].pk}/status",
                          data={"status": "invalid"}, content_type="application/json")

    assert statuses == {"own": 201, "other": 403}
    assert triaged.status_code == 403 and "is for another project" in triaged.json()["detail"]


@pytest.mark.parametrize(("scopes", "allowed_actions"), [
    ([TokenScope.UPLOAD], {"upload"}),
    ([TokenScope.TRIAGE], {"triage"}),
    ([TokenScope.JOBS], {"run job"}),
    ([], set()),
])
def test_a_token_does_only_what_its_scopes_allow(world, scopes, allowed_actions):
    _, token = services.create_api_token(user=world["users"]["staff"], name="scoped", scopes=scopes)
    client = Client(headers={"Authorization": f"Bearer {token}"})
    document = run_document(project="own", commit="d" * 40)
    document["project"]["slug"] = "own"

    responses = {
        "upload": client.post("/api/v1/runs", data=json.dumps(document), content_type="application/json"),
        "triage": client.post(f"/api/v1/alerts/{world['alerts']['own'].pk}/status", data={"status": "invalid"},
                              content_type="application/json"),
        "run job": client.post(f"/api/v1/jobs/{world['jobs']['own'].pk}/run", data={},
                               content_type="application/json"),
    }

    assert {action for action, response in responses.items() if response.status_code < 300} == allowed_actions
    assert all(response.status_code == 403 for action, response in responses.items() if action not in allowed_actions)


def new_project_document(name: str) -> str:
    return json.dumps(run_document(project=name, machine=f"{name}-machine"))


def test_when_creation_is_closed_only_staff_create_projects_and_machines(settings, world):
    settings.PILOTWEB_OPEN_CREATION = False
    uploader = api_client(world, "uploader")
    projects, machines = Project.objects.count(), world["runs"]["own"].machine.__class__.objects.count()

    refused = uploader.post("/api/v1/runs", data=new_project_document("Fresh"), content_type="application/json")
    on_new_machine = run_document(project="own", machine="new-machine")
    on_new_machine["project"]["slug"] = "own"
    refused_machine = uploader.post("/api/v1/runs", data=json.dumps(on_new_machine), content_type="application/json")
    created = api_client(world, "staff").post("/api/v1/runs", data=new_project_document("Staff"),
                                              content_type="application/json")

    assert refused.status_code == 403 and "PILOTWEB_OPEN_CREATION" in refused.json()["detail"]
    assert refused_machine.status_code == 403 and "No machine 'new-machine'" in refused_machine.json()["detail"]
    assert created.status_code == 201
    assert Project.objects.count() == projects + 1
    assert world["runs"]["own"].machine.__class__.objects.count() == machines + 1


def test_when_creation_is_open_a_user_creates_projects_up_to_the_quota_and_maintains_them(settings, world):
    settings.PILOTWEB_OPEN_CREATION = True
    settings.PILOTWEB_CREATION_QUOTA = 2
    client = api_client(world, "outsider")

    statuses = [client.post("/api/v1/runs", data=new_project_document(f"Mine {index}"),
                            content_type="application/json").status_code for index in range(3)]

    assert statuses == [201, 201, 403]
    mine = Project.objects.filter(created_by=world["users"]["outsider"])
    assert mine.count() == 2
    assert set(Membership.objects.filter(user=world["users"]["outsider"]).values_list("role", flat=True)) == {
        Role.MAINTAINER}


def test_only_staff_name_a_machines_queue(world):
    document = run_document(project="own", machine="gpu-box")
    document["project"]["slug"] = "own"
    document["machine"]["queue"] = "bench.gpu-1"

    refused = api_client(world, "uploader").post("/api/v1/runs", data=json.dumps(document),
                                                 content_type="application/json")
    accepted = api_client(world, "staff").post("/api/v1/runs", data=json.dumps(document),
                                               content_type="application/json")

    assert refused.status_code == 403 and "only staff name a machine's queue" in refused.json()["detail"]
    assert accepted.status_code == 201
