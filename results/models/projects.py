"""Who measures where: projects, their members' roles and API tokens, and the machines runs are measured on."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from .. import outbound
from ..identifiers import BRANCH_MAX_LENGTH, RESERVED_QUEUES, validate_branch, validate_name, validate_queue


class WebhookFormat(models.TextChoices):
    """The body a project's webhook is sent (:func:`results.notifications.webhook_payload`)."""

    JSON = "json", "JSON: every field, with text and html (scripts, Matrix hookshot, Slack-compatible receivers)"
    SLACK = "slack", "Slack: only text, in Slack's mrkdwn (Slack's incoming webhooks refuse other fields)"
    MATRIX = "matrix", "Matrix: only text and html (a hookshot webhook that should post nothing else)"


class Project(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    slug = models.SlugField(max_length=100, unique=True)
    repository_url = models.URLField(blank=True, help_text=(
        "Commits link to it where its host is GitHub, GitLab, Gitea or Codeberg."))
    commit_url_template = models.CharField(
        max_length=500, blank=True,
        validators=[RegexValidator(r"^https?://[^\s]*\{commit\}[^\s]*$",
                                   message="An http(s) address containing {commit}, without spaces.")],
        help_text="Where a commit is shown, e.g. https://git.example.org/tool/commit/{commit}; wins over the "
                  "repository URL's host.")
    default_branch = models.CharField(max_length=BRANCH_MAX_LENGTH, default="main", validators=[validate_branch])
    history_size = models.PositiveSmallIntegerField(
        default=10, help_text="K: nightly runs of the default branch a new nightly is compared against.")
    notify_emails = models.TextField(blank=True, help_text="Comma-separated addresses told of new regressions.")
    webhook_url = models.URLField(blank=True, help_text="Receives a JSON POST for every new alert group.")
    webhook_format = models.CharField(max_length=10, choices=WebhookFormat.choices, default=WebhookFormat.JSON,
                                      help_text="What the webhook's JSON holds.")
    bisect_regressions = models.BooleanField(default=False, help_text=(
        "Bisect a nightly regression once confirmed, with the job that runs its benchmark on its machine and builds "
        "revisions: its sessions take that machine's time."))
    private = models.BooleanField(default=False, help_text=(
        "Read by its members and staff only, whatever PILOTWEB_PUBLIC_READ says."))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.CheckConstraint(condition=Q(history_size__gte=2), name="project_history_size_min_2")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.webhook_url:
            try:
                outbound.check_webhook_url(self.webhook_url, allow_private=settings.PILOTWEB_WEBHOOK_ALLOW_PRIVATE)
            except ValueError as error:
                raise ValidationError({"webhook_url": f"{error} (PILOTWEB_WEBHOOK_ALLOW_PRIVATE allows private "
                                                      "addresses)."}) from None


class Machine(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    hostname = models.CharField(max_length=255, blank=True, validators=[validate_name])
    cpu_model = models.CharField(max_length=255, blank=True, validators=[validate_name])
    cores = models.PositiveIntegerField(null=True, blank=True, help_text="Logical CPU cores.")
    memory_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    os = models.CharField("OS", max_length=255, blank=True)
    hardware = models.JSONField(default=dict, blank=True, help_text="Further details captured on the machine.")
    queue = models.CharField(
        max_length=100, unique=True, validators=[validate_queue],
        help_text="The Celery queue this machine's benchmark worker consumes."
    )
    last_seen_at = models.DateTimeField(null=True, blank=True, help_text="Its last upload or registration.")
    worker_seen_at = models.DateTimeField(
        null=True, blank=True, help_text="When a benchmark worker consuming its queue last said it was alive.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(cores__isnull=True) | Q(cores__gte=1), name="machine_cores_positive"),
            models.CheckConstraint(condition=~Q(queue=""), name="machine_queue_not_empty"),
            models.CheckConstraint(condition=~Q(queue__in=RESERVED_QUEUES), name="machine_queue_not_reserved"),
        ]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    """What a member may do in a project (staff may do everything everywhere). Each role includes the ones
    before it: :data:`results.access.ROLE_ORDER`."""

    VIEWER = "viewer", "viewer: reads the project, also when it is private"
    UPLOADER = "uploader", "uploader: also posts runs"
    MAINTAINER = "maintainer", "maintainer: also triages alerts and vouches for the revisions it posts"


class Membership(models.Model):
    """A user's role in a project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


class TokenScope(models.TextChoices):
    """What a token may be used for, within its user's roles (:mod:`results.access`)."""

    UPLOAD = "upload", "upload: post runs"
    TRIAGE = "triage", "triage: change alerts"
    JOBS = "jobs", "jobs: define and run jobs (staff), and vouch for posted revisions (maintainers)"


class ApiToken(models.Model):
    """A per-user API token, optionally for one project only, with scopes. Only a SHA-256 digest is stored; the
    token is shown once, at creation. It can do no more than its user may (:mod:`results.access`)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=200, help_text="What the token is for, e.g. 'nightly CI'.")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, null=True, blank=True, related_name="api_tokens",
                                help_text="The one project it may write to (empty: any the user may).")
    scopes = models.JSONField(default=list, blank=True,
                              help_text=f"What it may do: any of {', '.join(TokenScope.values)}.")
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise a token.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        ordering = ["user", "name"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def clean(self) -> None:
        if not isinstance(self.scopes, list) or not set(self.scopes) <= set(TokenScope.values):
            raise ValidationError({"scopes": f"Give a list of scopes among {', '.join(TokenScope.values)}."})

    def allows(self, scope: str) -> bool:
        return scope in self.scopes
