from django import forms
from django.contrib import admin, messages
from django.db import models
from django.http import HttpRequest

from . import services
from .models import (
    ApiToken,
    Benchmark,
    FailedResult,
    Machine,
    Membership,
    Metric,
    Project,
    Result,
    Revision,
    Run,
    TokenScope,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "private", "default_branch", "repository_url"]
    list_filter = ["private"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]
    readonly_fields = ["created_by", "created_at"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "default_branch", "history_size", "private", "created_by", "created_at"]}),
        ("Commit links", {"fields": ["repository_url", "commit_url_template"],
                          "description": "Commits link to the repository's host (GitHub, GitLab, Gitea, Codeberg), "
                                         "or to the template where one is given."}),
        ("Notifications", {"fields": ["notify_emails", "webhook_url", "webhook_format"]}),
        ("Bisection", {"fields": ["bisect_regressions"]}),
    ]
    # An address typed without a scheme is https (Django 6's default, asked for now).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(Machine)
class MachineAdmin(admin.ModelAdmin):
    list_display = ["name", "hostname", "cpu_model", "cores", "memory_bytes", "os", "queue", "last_seen_at"]
    search_fields = ["name", "hostname", "queue"]


class MetricInline(admin.TabularInline):
    model = Metric
    extra = 0


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ["name", "project"]
    list_filter = ["project"]
    search_fields = ["name"]
    inlines = [MetricInline]


@admin.register(Metric)
class MetricAdmin(admin.ModelAdmin):
    list_display = ["name", "benchmark", "unit", "direction", "threshold", "confidence_level", "target_width"]
    list_filter = ["direction", "benchmark__project"]
    search_fields = ["name", "benchmark__name"]
    list_select_related = ["benchmark"]


@admin.register(Revision)
class RevisionAdmin(admin.ModelAdmin):
    list_display = ["commit", "project", "branch", "pull_request", "author", "timestamp"]
    list_filter = ["project", "branch"]
    search_fields = ["commit", "author", "message"]


class ResultInline(admin.TabularInline):
    model = Result
    extra = 0
    fields = ["metric", "mean", "subsession_size", "variance", "n", "ci_low", "ci_high", "independent", "converged"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class FailedResultInline(admin.TabularInline):
    model = FailedResult
    extra = 0
    fields = ["metric", "error"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "machine", "kind", "status", "revision", "started_at", "source"]
    list_filter = ["project", "machine", "kind", "status"]
    search_fields = ["run_key", "revision__commit"]
    list_select_related = ["project", "machine", "revision"]
    raw_id_fields = ["revision", "created_by"]
    readonly_fields = ["payload_digest", "created_at"]
    inlines = [ResultInline, FailedResultInline]


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "metric", "mean", "subsession_size", "variance", "n", "independent", "converged"]
    list_filter = ["independent", "converged", "run__project"]
    list_select_related = ["run__project", "metric__benchmark"]
    raw_id_fields = ["run", "metric"]
    readonly_fields = ["samples_shape"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role", "project"]
    search_fields = ["project__name", "project__slug", "user__username"]
    autocomplete_fields = ["project", "user"]


class ApiTokenForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=TokenScope.choices, widget=forms.CheckboxSelectMultiple,
                                       initial=list(services.DEFAULT_TOKEN_SCOPES), required=False)

    class Meta:
        model = ApiToken
        fields = ["user", "name", "project", "scopes", "revoked"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = ["name", "user", "project", "scopes", "prefix", "created_at", "last_used_at", "revoked"]
    list_filter = ["revoked"]
    fields = ["user", "name", "project", "scopes", "revoked"]
    autocomplete_fields = ["user", "project"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        row, token = services.create_api_token(user=obj.user, name=obj.name, project=obj.project, scopes=obj.scopes)
        obj.pk = row.pk
        messages.warning(request, f"The new token is {token} — copy it now, it is not shown again.")
