"""Browser tests: real headless Chromium (Debian's package) driven by Playwright against a live server.

Screenshots go to tests/artifacts/ (git-ignored); look at them.
"""

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium package is needed for the browser tests (./pilot test installs it).")
    # Playwright's sync API runs an event loop; Django refuses sync ORM calls inside one unless told.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def screenshot(page):
    """Save a full-page screenshot under tests/artifacts/ (``screenshot("nightly")``)."""
    ARTIFACTS.mkdir(exist_ok=True)

    def take(name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def login(page, live_server):
    """Log ``user`` in through the real login form."""

    def log_in(user, password: str = "correct horse battery staple") -> None:
        page.goto("/accounts/login/")
        page.fill("input[name=username]", user.get_username())
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_load_state()

    return log_in


@pytest.fixture
def results_without_broker(monkeypatch):
    """Runs are compared by the tests themselves and nobody is notified: nothing goes to a (missing) broker."""
    from results import services, tasks

    monkeypatch.setattr(services, "_enqueue_comparison", lambda run_id: None)
    monkeypatch.setattr(tasks.notify_alert_group, "delay", lambda *args, **kwargs: None)
