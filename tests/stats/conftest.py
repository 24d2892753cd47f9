"""The numerical core is tested as it is used by other code: without Django. ``./pilot test`` runs this
directory with ``-p no:django``; then nothing may have imported Django by the end."""

import sys

import pytest


@pytest.fixture(autouse=True, scope="session")
def without_django(pytestconfig):
    yield
    if not pytestconfig.pluginmanager.has_plugin("django"):
        assert "django" not in sys.modules, sorted(name for name in sys.modules if name.startswith("django"))
