from django.apps import AppConfig


class ResultsConfig(AppConfig):
    name = "results"
    verbose_name = "Results"

    def ready(self) -> None:
        from django.db import transaction

        from .signals import alerts_opened

        def notify(sender, *, group_id: int, **kwargs) -> None:
            from .tasks import enqueue, notify_alert_group

            transaction.on_commit(lambda: enqueue(notify_alert_group, group_id))

        alerts_opened.connect(notify, dispatch_uid="results.notify_alert_group")
