"""The browser stack itself: Chromium renders a page of the live server and Plotly is served locally."""

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_chromium_renders_the_dashboard_and_plotly_is_served_locally(page, screenshot):
    page.goto("/")
    assert page.title().endswith("Pilot Web")
    response = page.request.get("/static/vendor/plotly/plotly.min.js")
    assert response.ok and "plotly.js" in response.text()[:200]
    screenshot("smoke-home")
