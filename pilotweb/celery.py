"""The Celery application: broker and result backend from Django settings (``REDIS_URL``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pilotweb.settings")

app = Celery("pilotweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
