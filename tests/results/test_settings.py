"""Settings come from the environment; production refuses to start without its secrets."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRONG_KEY = "tests-only-7f3c9a1e5b2d8046-c4e1f9a7d3b5826e0a4c7f1e9d3b5a82"


def load_settings(**environment: str) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items()
             if key not in ("DJANGO_SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "DEBUG", "REDIS_URL",
                            "PILOTWEB_LOCAL", "PILOTWEB_VAR_DIR")}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
                               "print(settings.DATABASES['default']['ENGINE'], settings.DEBUG, settings.REDIS_URL)"],
        cwd=ROOT, env={**clean, "DJANGO_SETTINGS_MODULE": "pilotweb.settings", **environment},
        capture_output=True, text=True,
    )


def test_development_defaults_work_with_nothing_set():
    loaded = load_settings()

    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["django.db.backends.sqlite3", "True", "redis://127.0.0.1:6379/0"]


def test_pilot_up_runs_without_debug_pages_or_production_secrets(tmp_path):
    loaded = load_settings(PILOTWEB_LOCAL="true", PILOTWEB_VAR_DIR=str(tmp_path))
    again = load_settings(PILOTWEB_LOCAL="true", PILOTWEB_VAR_DIR=str(tmp_path))

    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["django.db.backends.sqlite3", "False", "redis://127.0.0.1:6379/0"]
    key = (tmp_path / "secret_key").read_text()
    assert len(key) >= 50 and again.returncode == 0 and (tmp_path / "secret_key").read_text() == key


@pytest.mark.parametrize("missing", ["DJANGO_SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL"])
def test_production_refuses_to_start_without_a_required_setting(missing):
    environment = {"DEBUG": "false", "DJANGO_SECRET_KEY": STRONG_KEY, "ALLOWED_HOSTS": "pilot.example.com",
                   "DATABASE_URL": "postgres://pilot@db.example.com/pilot"}
    del environment[missing]

    loaded = load_settings(**environment)

    assert loaded.returncode != 0
    assert "ImproperlyConfigured" in loaded.stderr and missing in loaded.stderr


def test_production_starts_when_everything_is_set():
    loaded = load_settings(DEBUG="false", DJANGO_SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="pilot.example.com",
                           DATABASE_URL="postgres://pilot@db.example.com/pilot", REDIS_URL="redis://cache:6379/1")

    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["django.db.backends.postgresql", "False", "redis://cache:6379/1"]


@pytest.mark.parametrize("key", ["short", "s" * 60, "django-insecure-" + STRONG_KEY])
def test_production_refuses_a_key_djangos_deploy_check_calls_weak(key):
    loaded = load_settings(DEBUG="false", DJANGO_SECRET_KEY=key, ALLOWED_HOSTS="pilot.example.com",
                           DATABASE_URL="postgres://pilot@db.example.com/pilot")

    assert loaded.returncode != 0
    assert "DJANGO_SECRET_KEY is weak" in loaded.stderr


def test_a_malformed_boolean_is_a_clear_error():
    loaded = load_settings(DEBUG="maybe")

    assert "DEBUG must be true or false" in loaded.stderr


def test_the_numerical_core_imports_without_django():
    probe = subprocess.run([sys.executable, "-c", "import sys, results.stats; print('django' in sys.modules)"],
                           cwd=ROOT, capture_output=True, text=True)

    assert probe.stdout.strip() == "False", probe.stderr


SERVE_PLOTLY = """
import django; django.setup()
from django.core.management import call_command
from django.test import Client
from django.templatetags.static import static
call_command("collectstatic", interactive=False, verbosity=0)
address = static("vendor/plotly/plotly.min.js")
response = Client().get(address, headers={"Accept-Encoding": "gzip"})
body = b"".join(response.streaming_content) if response.streaming else response.content
print(address, response.status_code, response.get("Content-Encoding"), response.get("Cache-Control").replace(" ", ""),
      len(body))
"""


def test_pilot_up_serves_static_files_compressed_and_cached_as_production_does(tmp_path):
    """Under `./pilot up` the 4.8 MB Plotly bundle was served uncompressed with a 60 s cache (1.4-3.0 s a chart
    page): the same storage as production now, content-hashed, gzipped, cached for a year."""
    clean = {key: value for key, value in os.environ.items()
             if key not in ("DJANGO_SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "DEBUG", "REDIS_URL",
                            "PILOTWEB_LOCAL", "PILOTWEB_VAR_DIR", "STATIC_ROOT")}
    served = subprocess.run([sys.executable, "-c", SERVE_PLOTLY], cwd=ROOT, capture_output=True, text=True, env={
        **clean, "DJANGO_SETTINGS_MODULE": "pilotweb.settings", "PILOTWEB_LOCAL": "true",
        "PILOTWEB_VAR_DIR": str(tmp_path)})

    assert served.returncode == 0, served.stderr
    address, status, encoding, cache, size = served.stdout.split()
    assert status == "200" and encoding == "gzip" and int(size) < 2_000_000
    assert cache.startswith("max-age=") and int(cache.split("=")[1].split(",")[0]) >= 365 * 24 * 3600
    assert address.startswith("/static/vendor/plotly/plotly.min.") and address != "/static/vendor/plotly/plotly.min.js"
