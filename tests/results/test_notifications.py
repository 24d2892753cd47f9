"""Notifications where teams are: the webhook's JSON carries a readable summary (``text``, ``html``) with
each change and links to its alert and run, which chat webhooks post as it is; Slack and Matrix formats."""

import json
from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone

from results import comparisons, notifications
from results.models import Alert, AlertGroup, Channel, Delivery, DeliveryStatus, Project, WebhookFormat
from results.presentation import format_change
from tests.factories import posted_run
from tests.processes import RecordingServer

pytestmark = pytest.mark.django_db

SITE = "https://perf.example.org"


@pytest.fixture
def receiver():
    """A webhook receiver on a real local port that answers 200."""
    with RecordingServer(lambda request: (200, {}, b"")) as server:
        yield server


def received(server: RecordingServer) -> list[tuple[str, dict]]:
    """Each JSON body a receiver was sent, with its content type."""
    return [({name.lower(): value for name, value in headers.items()}["content-type"], json.loads(body))
            for _, _, headers, body in server.requests]


def regressed_group(names=("sort", "hash")) -> AlertGroup:
    for night in range(10):
        posted_run(night, dict.fromkeys(names, 1.0), sd=0.002)
    tonight = posted_run(10, {name: 1.2 + 0.1 * index for index, name in enumerate(names)}, sd=0.002)
    comparisons.compare_run(run_id=tonight.pk)
    return AlertGroup.objects.get()


def expected_lines(group: AlertGroup) -> dict[int, str]:
    """Each alert's line as the pages write its change: "sort (time) +20.0% [+19.8%, +20.2%] (regression)"."""
    lines = {}
    for alert in Alert.objects.filter(group=group).select_related("comparison__candidate__metric__benchmark"):
        comparison, metric = alert.comparison, alert.comparison.candidate.metric
        change = format_change(comparison.ratio, comparison.ci_low, comparison.ci_high)
        lines[alert.pk] = f"{metric.benchmark.name} ({metric.name}) {change} ({comparison.verdict})"
    return lines


@pytest.fixture(autouse=True)
def loopback_receivers(settings):
    """The receivers here listen on loopback, which a webhook may reach only when the operator allows it."""
    settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE = True


def test_the_webhook_receives_the_json_with_a_summary_linking_each_alert_and_the_run(settings, receiver):
    settings.PILOTWEB_SITE_URL = SITE
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    group = regressed_group()
    Project.objects.update(webhook_url=f"{receiver.url}/hook", notify_emails="perf@example.com")
    project, run_id = Project.objects.get(), group.run_id

    notifications.notify_alert_group(group_id=group.pk)

    ((content_type, payload),) = received(receiver)
    assert content_type == "application/json"
    # The fields it always had are kept.
    assert {"event", "project", "run", "machine", "commit", "branch", "alerts"} <= set(payload)
    assert (payload["project"], payload["run"]) == (project.slug, run_id)
    assert {alert["benchmark"] for alert in payload["alerts"]} == {"sort", "hash"}
    run_url = f"{SITE}/runs/{run_id}/"
    alert_urls = {alert_id: f"{SITE}/alerts/?project={project.slug}#alert-{alert_id}"
                  for alert_id in expected_lines(group)}
    text = payload["text"]
    assert text.splitlines()[0].startswith(f"Pilot Web: {project.name}, 2 new alerts in run #{run_id} on ")
    for alert_id, line in expected_lines(group).items():
        assert f"- {line} {alert_urls[alert_id]}" in text.splitlines()
    assert text.splitlines()[-1] == f"Run: {run_url}"
    assert f'<a href="{run_url}">run #{run_id}</a>' in payload["html"]
    for alert_id, line in expected_lines(group).items():
        label, rest = line.split(") ", 1)
        assert f'<li><a href="{alert_urls[alert_id]}">{label})</a> {rest}</li>' in payload["html"]
    assert payload["url"] == run_url and {alert["url"] for alert in payload["alerts"]} == set(alert_urls.values())
    # The email tells the same.
    assert mail.outbox[0].body == text


def test_a_project_chooses_its_webhooks_format(settings, receiver):
    settings.PILOTWEB_SITE_URL = SITE
    group = regressed_group(names=("sort",))
    Project.objects.update(webhook_url=f"{receiver.url}/hook", webhook_format=WebhookFormat.SLACK)

    notifications.notify_alert_group(group_id=group.pk)

    ((_, payload),) = received(receiver)
    assert set(payload) == {"text"} and f"<{SITE}/runs/{group.run_id}/|" in payload["text"]


@pytest.mark.parametrize("format_name", list(WebhookFormat))
def test_each_format_carries_the_change_lines(settings, format_name):
    settings.PILOTWEB_SITE_URL = SITE
    group = regressed_group()
    lines = expected_lines(group)

    payload = notifications.webhook_payload(notifications.alert_group_summary(group), format_name=format_name)

    expected_keys = {"slack": {"text"}, "matrix": {"text", "html"}}.get(format_name)
    assert expected_keys is None or set(payload) == expected_keys
    for alert_id, line in lines.items():
        label, rest = line.split(") ", 1)
        if format_name == WebhookFormat.SLACK:
            assert f"• <{SITE}/alerts/?project={group.run.project.slug}#alert-{alert_id}|{label})> {rest}" \
                in payload["text"].splitlines()
        else:
            assert line in payload["text"] and f"{label})</a> {rest}" in payload["html"]


def test_without_the_site_address_the_summary_has_no_links(settings):
    settings.PILOTWEB_SITE_URL = ""
    group = regressed_group()

    payload = notifications.webhook_payload(notifications.alert_group_summary(group))

    assert "http" not in payload["text"] and "<a " not in payload["html"]
    assert set(expected_lines(group).values()) == {line[2:] for line in payload["text"].splitlines()[1:]}
    assert payload["url"] is None and all(alert["url"] is None for alert in payload["alerts"])


def test_names_are_escaped_for_html_and_slack(settings):
    settings.PILOTWEB_SITE_URL = SITE
    group = regressed_group(names=("<b>&sort",))
    summary = notifications.alert_group_summary(group)

    html = notifications.webhook_payload(summary, format_name="matrix")["html"]
    slack = notifications.webhook_payload(summary, format_name="slack")["text"]

    assert "&lt;b&gt;&amp;sort (time)" in html and "<b>" not in html
    assert "|&lt;b&gt;&amp;sort (time)>" in slack and "<b>" not in slack


def test_an_unknown_format_is_refused(settings):
    group = regressed_group()

    with pytest.raises(ValueError, match="teams"):
        notifications.webhook_payload(notifications.alert_group_summary(group), format_name="teams")


@pytest.fixture
def failing_receiver():
    """A webhook receiver that is down: answers every request with a 500."""
    with RecordingServer(lambda request: (500, {}, b"")) as server:
        yield server


def test_while_the_webhook_is_down_the_email_goes_once_and_the_webhook_is_retried_with_backoff_then_given_up(
        settings, failing_receiver):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    group = regressed_group(names=("sort",))
    Project.objects.update(webhook_url=f"{failing_receiver.url}/hook", notify_emails="perf@example.com")
    waits = []

    # The catch-up task runs every few minutes; each time, only what is due is tried.
    for _ in range(notifications.MAX_ATTEMPTS + 3):
        notifications.notify_alert_group(group_id=group.pk)
        notifications.notify_alert_group(group_id=group.pk)  # a second delivery of the task, at once: not due
        webhook = Delivery.objects.get(group=group, channel=Channel.WEBHOOK)
        if webhook.status == DeliveryStatus.PENDING:
            waits.append(webhook.next_attempt_at - timezone.now())
        Delivery.objects.filter(group=group, status=DeliveryStatus.PENDING).update(next_attempt_at=timezone.now())

    assert len(mail.outbox) == 1
    assert len(failing_receiver.requests) == notifications.MAX_ATTEMPTS
    webhook = Delivery.objects.get(group=group, channel=Channel.WEBHOOK)
    assert (webhook.status, webhook.attempts) == (DeliveryStatus.FAILED, notifications.MAX_ATTEMPTS)
    assert "answered 500" in webhook.error
    # The waits grow: 1, 5, 30 minutes, 2 hours (within the seconds the test took).
    assert [round(wait.total_seconds() / 60) for wait in waits] == [1, 5, 30, 120]
    assert AlertGroup.objects.get().notified_at is not None
    page = Client().get("/alerts/").content.decode()
    assert "webhook: <strong class=\"error\">failed</strong>, given up after 5 attempts" in page
    assert "e-mail: sent" in page
    listed = Client().get("/api/v1/alerts").json()["items"][0]["notifications"]
    assert {(item["channel"], item["status"]) for item in listed} == {("email", "sent"), ("webhook", "failed")}


def test_a_webhook_to_a_private_address_is_refused_unless_the_operator_allows_it(settings, receiver):
    settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE = False
    group = regressed_group(names=("sort",))
    Project.objects.update(webhook_url=f"{receiver.url}/hook")

    notifications.notify_alert_group(group_id=group.pk)

    assert received(receiver) == []
    webhook = Delivery.objects.get(group=group)
    assert webhook.status == DeliveryStatus.FAILED and webhook.attempts == 1
    assert "127.0.0.1 is a loopback address: refused as a target" in webhook.error
    with pytest.raises(ValidationError, match="loopback"):
        Project(name="p", slug="p", webhook_url="http://127.0.0.1:8000/hook").full_clean()
    with pytest.raises(ValidationError, match="link-local"):
        Project(name="p", slug="p", webhook_url="http://169.254.169.254/latest/meta-data/").full_clean()


def test_names_stored_with_line_breaks_add_no_line_to_the_text_or_the_email(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    group = regressed_group(names=("sort",))
    Project.objects.update(name="Demo\nFake: line", notify_emails="perf@example.com")
    from results.models import Benchmark

    Benchmark.objects.update(name="sort\n- fake alert")

    notifications.notify_alert_group(group_id=group.pk)

    (message,) = mail.outbox
    assert "\n" not in message.subject and len(message.body.splitlines()) == 2
    assert message.body.splitlines()[1].startswith("- sort - fake alert (time) +")


def test_an_alert_that_joins_a_group_already_announced_is_announced_on_its_own(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PILOTWEB_SITE_URL = SITE
    group = regressed_group()
    Project.objects.update(notify_emails="perf@example.com")
    first, joining = Alert.objects.filter(group=group).order_by("pk")
    # The second alert is the daily scan's, opened after the night's group was announced: kept apart until then.
    elsewhere = AlertGroup.objects.create(run=group.run.project.runs.exclude(pk=group.run_id).first())
    Alert.objects.filter(pk=joining.pk).update(group=elsewhere)

    notifications.notify_alert_group(group_id=group.pk)
    Alert.objects.filter(pk=joining.pk).update(group=group)
    elsewhere.delete()
    assert notifications.pending_groups(older_than=timedelta(0)) == [group.pk]
    notifications.notify_alert_group(group_id=group.pk)
    notifications.notify_alert_group(group_id=group.pk)  # once announced, not again

    assert [len(message.body.split(f"#alert-{first.pk}")) - 1 for message in mail.outbox] == [1, 0]
    assert [len(message.body.split(f"#alert-{joining.pk}")) - 1 for message in mail.outbox] == [0, 1]
    assert set(Alert.objects.filter(group=group).values_list("announced_at", flat=True)) != {None}
    assert not Alert.objects.filter(group=group, announced_at__isnull=True).exists()
    assert notifications.pending_groups(older_than=timedelta(0)) == []


def test_an_alert_that_joins_while_a_channel_waits_for_its_retry_is_announced_next_on_every_channel(
        settings, receiver, failing_receiver):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PILOTWEB_SITE_URL = SITE
    group = regressed_group()
    first, joining = Alert.objects.filter(group=group).order_by("pk")
    elsewhere = AlertGroup.objects.create(run=group.run.project.runs.exclude(pk=group.run_id).first())
    Alert.objects.filter(pk=joining.pk).update(group=elsewhere)
    Project.objects.update(notify_emails="perf@example.com", webhook_url=f"{failing_receiver.url}/hook")

    notifications.notify_alert_group(group_id=group.pk)  # the e-mail goes; the webhook is down
    Alert.objects.filter(pk=joining.pk).update(group=group)  # the daily scan's alert joins meanwhile
    elsewhere.delete()
    Project.objects.update(webhook_url=f"{receiver.url}/hook")  # the webhook is back for its retry
    Delivery.objects.filter(group=group).update(next_attempt_at=timezone.now())
    notifications.notify_alert_group(group_id=group.pk)

    assert not Alert.objects.get(pk=joining.pk).announced_at  # named by neither channel's first message
    Alert.objects.filter(pk=joining.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    AlertGroup.objects.filter(pk=group.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert notifications.pending_groups() == [group.pk]
    notifications.notify_alert_group(group_id=group.pk)

    first_link, joining_link = f"#alert-{first.pk}", f"#alert-{joining.pk}"
    assert [(first_link in message.body, joining_link in message.body) for message in mail.outbox] == [
        (True, False), (False, True)]
    webhook_texts = [body["text"] for _, body in received(receiver)]
    assert [(first_link in text, joining_link in text) for text in webhook_texts] == [(True, False), (False, True)]
    assert not Alert.objects.filter(group=group, announced_at__isnull=True).exists()
