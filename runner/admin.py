from django.contrib import admin
from django.http import HttpRequest

from .models import Job, Round, Session


class StaffOnlyAdmin(admin.ModelAdmin):
    """Jobs run commands on benchmark machines: only staff may see or change them, even with permissions."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_active and request.user.is_staff and super().has_view_permission(request, obj)


@admin.register(Job)
class JobAdmin(StaffOnlyAdmin):
    list_display = ["name", "project", "benchmark", "machine", "workload_kind", "builtin", "warmup", "enabled",
                    "schedule"]
    list_filter = ["project", "machine", "workload_kind", "enabled"]
    search_fields = ["name", "benchmark"]
    readonly_fields = ["schedule", "created_by", "created_at", "updated_at"]

    def save_model(self, request: HttpRequest, obj: Job, form, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0
    fields = ["index", "workload", "work_amount", "duration", "readings", "analysed", "finished_at"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(StaffOnlyAdmin):
    list_display = ["id", "job", "status", "trigger", "run_kind", "worker", "queued_at", "started_at", "finished_at"]
    list_filter = ["status", "trigger", "job__project"]
    list_select_related = ["job"]
    readonly_fields = ["attempt", "worker", "process_group", "heartbeat_at", "progress", "outcome", "error",
                       "started_at", "finished_at", "runs"]
    inlines = [RoundInline]
