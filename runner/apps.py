from django.apps import AppConfig


class RunnerConfig(AppConfig):
    name = "runner"
    verbose_name = "Runner"

    def ready(self) -> None:
        from results.signals import alerts_opened

        def confirm(sender, *, alert_ids: list[int], **kwargs) -> None:
            from .services import confirm_alerts

            confirm_alerts(alert_ids=alert_ids)

        alerts_opened.connect(confirm, dispatch_uid="runner.confirm_alerts")
