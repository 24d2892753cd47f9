from django.apps import AppConfig


class RunnerConfig(AppConfig):
    name = "runner"
    verbose_name = "Runner"

    def ready(self) -> None:
        from results.extensions import add_alert_sessions, add_bisections, add_culprits, add_to_alerts, add_to_run_pages
        from results.signals import alerts_opened

        from celery.signals import worker_ready

        from .alert_page import bisections, confirmation_session_ids, confirmation_sessions
        from .bisection.report import ended_bisections, night_culprits
        from .heartbeat import on_worker_ready
        from .receivers import confirm_opened_alerts
        from .run_page import session_analysis

        add_to_run_pages(session_analysis)
        add_to_alerts(confirmation_sessions)
        add_to_alerts(bisections)
        add_bisections(ended_bisections)
        add_culprits(night_culprits)
        add_alert_sessions(confirmation_session_ids)
        # A module-level receiver: signals hold receivers weakly, and a function defined here would be
        # collected as soon as ready() returns (DEBUG's signature check cached it, hiding that in development).
        alerts_opened.connect(confirm_opened_alerts, dispatch_uid="runner.confirm_alerts")
        worker_ready.connect(on_worker_ready, dispatch_uid="runner.worker_heartbeat")
