"""Django settings, read from the environment.

Development (``DEBUG`` true, the default when nothing is set) runs on embedded defaults:
a SQLite file under ``var/`` and a Redis on localhost. ``./pilot up`` sets ``PILOTWEB_LOCAL``: the same
defaults without debug pages. Production (``DEBUG=false``) refuses to start unless ``DJANGO_SECRET_KEY``,
``ALLOWED_HOSTS`` and ``DATABASE_URL`` are set.
"""

import os
import re
import secrets
from pathlib import Path

import dj_database_url
import plotly
from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PILOTWEB_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}.")


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


# `./pilot up`: one machine, SQLite, plain http on localhost, left running by teams. No debug pages (a 404
# would list every URL pattern), but none of production's requirements either: its secret key is made once
# and kept in the var directory.
LOCAL = env_bool("PILOTWEB_LOCAL", False)
DEBUG = env_bool("DEBUG", not LOCAL)
PRODUCTION = not DEBUG and not LOCAL

REQUIRED_IN_PRODUCTION = ("DJANGO_SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL")
if PRODUCTION:
    missing = [name for name in REQUIRED_IN_PRODUCTION if not os.environ.get(name)]
    if missing:
        raise ImproperlyConfigured(
            "Production (DEBUG=false) needs these environment variables: "
            + ", ".join(missing)
            + ". See docs/deployment.md, 'Configuration'."
        )


def local_secret_key() -> str:
    """The key of `./pilot up`, made on its first start and kept (sessions survive a restart)."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = (os.environ.get("DJANGO_SECRET_KEY") or (local_secret_key() if LOCAL and not DEBUG else "")
              or "django-insecure-development-only-key")
if PRODUCTION and (len(SECRET_KEY) < SECRET_KEY_MIN_LENGTH or len(set(SECRET_KEY)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS
                  or SECRET_KEY.startswith(SECRET_KEY_INSECURE_PREFIX)):
    # The same rule as Django's deploy check (security.W009), refused instead of warned about.
    raise ImproperlyConfigured(
        f"DJANGO_SECRET_KEY is weak: production needs at least {SECRET_KEY_MIN_LENGTH} characters, "
        f"{SECRET_KEY_MIN_UNIQUE_CHARACTERS} of them different, not starting with {SECRET_KEY_INSECURE_PREFIX!r}. "
        "Generate one: python -c 'import secrets; print(secrets.token_urlsafe(50))'."
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_celery_beat",
    "ninja",
    "results",
    "runner",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (Plotly's 4.8 MB bundle among them) compressed, with far-future caching when hashed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "pilotweb.middleware.ApiErrorBodyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "pilotweb.middleware.NulInQueryMiddleware",
    "pilotweb.middleware.DatabaseBusyMiddleware",
]

ROOT_URLCONF = "pilotweb.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "pilotweb.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'pilotweb.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the dashboard read while a worker writes; the timeout rides out short write locks. A 64 MiB page
    # cache and memory-mapped reads: a nightly comparison of 10,000 series writes 30,000 rows (1.0 -> 0.7 s).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536; PRAGMA mmap_size=268435456;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not memory, so that worker processes started by integration tests share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
    VAR_DIR.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Plotly's own build, from the pinned plotly package: served by the dashboard, never fetched from a CDN.
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", Path(plotly.__file__).parent / "package_data")]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
# Development (DEBUG) serves the source files through whitenoise as they change (no collectstatic needed).
WHITENOISE_AUTOREFRESH = WHITENOISE_USE_FINDERS = DEBUG
if not DEBUG:
    # Production and `./pilot up` alike: collectstatic writes gzip (and, with brotli installed, Brotli) copies
    # and content-hashed names, which whitenoise serves with a one-year cache lifetime. Plotly's 4.8 MB
    # bundle is 1.4 MB gzipped: the run and history pages took 1.4-3.0 s under `./pilot up` without it.
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "results:home"
LOGOUT_REDIRECT_URL = "results:home"

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "analysis"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# A session keeps measuring through a broker restart; its message, if lost, is re-sent by recovery and a
# second delivery of the same attempt is skipped (runner.dispatch).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TIMEZONE = TIME_ZONE
# One machine without an analysis worker: the analysis tasks (comparing a run, its change points, notifying its
# alerts) run in the process that sends them, once its transaction commits. Sessions still go to their machine's
# queue, and the periodic catch-ups need celery beat.
PILOTWEB_ANALYSIS_IN_PROCESS = env_bool("PILOTWEB_ANALYSIS_IN_PROCESS", False)
# A nightly of more series is compared in chunks of this many, which the analysis workers take in parallel.
PILOTWEB_COMPARISON_CHUNK_SERIES = int(os.environ.get("PILOTWEB_COMPARISON_CHUNK_SERIES", "5000"))

EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "pilotweb@localhost")

# The largest request body or uploaded file (and what a compressed upload may expand to): a bigger one is a 413.
PILOTWEB_MAX_UPLOAD_BYTES = int(os.environ.get("PILOTWEB_MAX_UPLOAD_BYTES", 64 * 1024 * 1024))
DATA_UPLOAD_MAX_MEMORY_SIZE = PILOTWEB_MAX_UPLOAD_BYTES

# Anonymous visitors may read the dashboard (never write) when this is true; a private project is read by its
# members and staff only either way (results.access).
PILOTWEB_PUBLIC_READ = env_bool("PILOTWEB_PUBLIC_READ", True)
# Who may create a project or a machine by posting a run: any logged-in user (a one-team `./pilot up`), or staff
# only (production's default: a token cannot fill the database with projects). A user who creates a project
# becomes its maintainer; each non-staff user creates at most PILOTWEB_CREATION_QUOTA projects and as many machines.
PILOTWEB_OPEN_CREATION = env_bool("PILOTWEB_OPEN_CREATION", not PRODUCTION)
PILOTWEB_CREATION_QUOTA = int(os.environ.get("PILOTWEB_CREATION_QUOTA", "50"))
# Webhooks may post to loopback, link-local and private addresses only when the operator allows it (a webhook on
# the same network as the dashboard would otherwise let a project's maintainer reach internal services).
PILOTWEB_WEBHOOK_ALLOW_PRIVATE = env_bool("PILOTWEB_WEBHOOK_ALLOW_PRIVATE", False)

# The dashboard's address as people reach it (e.g. https://perf.example.org): notifications, sent without a
# request to take it from, link their runs and alerts with it; without it they carry no links.
PILOTWEB_SITE_URL = os.environ.get("PILOTWEB_SITE_URL", "").rstrip("/")
if PILOTWEB_SITE_URL and not re.fullmatch(r"https?://[^/\s]+(/\S*)?", PILOTWEB_SITE_URL):
    raise ImproperlyConfigured(f"PILOTWEB_SITE_URL must be an http(s) address, not {PILOTWEB_SITE_URL!r}")

# A "night" runs from this hour (in TIME_ZONE) to the same hour the next day and is named by the date it
# starts on: suites that start at 23:00 and finish at 03:00 post into one night.
PILOTWEB_NIGHT_STARTS_AT = int(os.environ.get("PILOTWEB_NIGHT_STARTS_AT", "12"))
if not 0 <= PILOTWEB_NIGHT_STARTS_AT <= 23:
    raise ImproperlyConfigured(f"PILOTWEB_NIGHT_STARTS_AT must be an hour from 0 to 23, not {PILOTWEB_NIGHT_STARTS_AT}")

if PRODUCTION:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}


def _periodic(task: str, seconds: float) -> dict:
    """A catch-up task sent every `seconds` to the analysis workers."""
    return {"task": task, "schedule": seconds, "options": {"queue": "analysis"}}


CELERY_BEAT_SCHEDULE = {
    # Runs and alert groups whose task was lost with a worker or the broker.
    "compare-pending-runs": _periodic("results.tasks.compare_pending_runs", 300.0),
    "notify-pending-alert-groups": _periodic("results.tasks.notify_pending_alert_groups", 300.0),
    # Sessions whose worker died are resumed from their stored rounds (runner.services.recover_stale_sessions).
    "recover-stale-sessions": _periodic("runner.tasks.recover_stale_sessions", 60.0),
    # Bisections whose advance was lost with a worker or the broker (runner.bisection.service.advance).
    "advance-bisections": _periodic("runner.tasks.advance_bisections", 120.0),
    # Change points of every series, once a day, and alerts for those to act on (results.alerts.scan_change_points).
    "scan-change-points": _periodic("results.tasks.scan_change_points", 86400.0),
}
