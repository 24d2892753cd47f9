"""Outbound requests (results/outbound.py) against real HTTP servers on loopback: refused targets get no
connection, redirects are not followed, and a name that resolves elsewhere by the time of the call is judged
where it connects. Names other than loopback's are resolved by a table (the machine may be offline); nothing
connects beyond loopback."""

import json
import re
import socket
import subprocess
import sys
from http.server import ThreadingHTTPServer

import pytest

from results.outbound import OutboundHTTPError, OutboundRefused, address_refusal, check_webhook_url, post_json
from tests.processes import ROOT, RecordingServer


PUBLIC = "93.184.216.34"  # example.com's address when written; only judged, never connected to
TIMEOUT = 5.0


class Target(RecordingServer):
    """A stdlib HTTP server on 127.0.0.1 that counts the connections it accepts, records each request and
    answers every one with ``status`` and ``headers``."""

    def __init__(self, status: int = 200, headers: dict | None = None) -> None:
        self.connections = 0
        target = self

        class Server(ThreadingHTTPServer):
            def verify_request(self, request, client_address) -> bool:
                target.connections += 1
                return True

        super().__init__(lambda request: (status, headers or {}, b""), server_class=Server)


@pytest.fixture
def resolver(monkeypatch):
    """Host names resolved from a table (``resolver[name] = [address, …]``, changeable between calls); IP
    addresses as the system resolves them, without DNS."""
    table: dict[str, list[str]] = {}
    system = socket.getaddrinfo

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        if host not in table:
            return system(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)
        if not table[host]:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [entry for address in table[host] for entry in system(address, port, family, type, proto, flags)]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


@pytest.mark.parametrize(("address", "reason"), [
    ("127.0.0.1", "a loopback address"),
    ("::1", "a loopback address"),
    ("::ffff:127.0.0.1", "a loopback address (127.0.0.1)"),
    ("169.254.169.254", "a link-local or cloud metadata address"),
    ("::ffff:169.254.169.254", "a link-local or cloud metadata address (169.254.169.254)"),
    ("fe80::1", "a link-local or cloud metadata address"),
    ("10.0.0.1", "a private address"),
    ("192.168.1.1", "a private address"),
    ("172.16.0.1", "a private address"),
    ("fd00::1", "a private address"),
    ("0.0.0.0", "an unspecified address"),
    ("::", "an unspecified address"),
    ("224.0.0.1", "a multicast address"),
    ("ff02::1", "a multicast address"),
    ("240.0.0.1", "a reserved address"),
    ("100.64.0.1", "not a globally reachable address"),
    ("64:ff9b::a00:1", "a private address (10.0.0.1)"),
    ("2002:7f00:1::", "a loopback address (127.0.0.1)"),
])
def test_loopback_link_local_private_and_other_non_global_addresses_are_refused(address, reason):
    assert address_refusal(address) == reason


@pytest.mark.parametrize("address", [PUBLIC, "2606:2800:220:1:248:1893:25c8:1946", f"::ffff:{PUBLIC}",
                                     "64:ff9b::5db8:d822", "2002:5db8:d822::"])
def test_a_public_address_is_allowed_in_every_form(address):
    assert address_refusal(address) is None


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "::ffff:127.0.0.1", "10.0.0.1", "192.168.1.1",
                                     "172.16.0.1", "fd00::1", "100.64.0.1"])
def test_allowing_private_targets_allows_loopback_and_private_networks(address):
    assert address_refusal(address, allow_private=True) is None


@pytest.mark.parametrize("address", ["169.254.169.254", "fe80::1", "fd00:ec2::254", "100.100.100.200", "0.0.0.0",
                                     "::", "224.0.0.1"])
def test_metadata_link_local_unspecified_and_multicast_stay_refused_when_private_targets_are_allowed(address):
    assert address_refusal(address, allow_private=True) is not None


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_loopback_target_is_refused_before_it_is_connected_to(scheme):
    with Target() as target:
        with pytest.raises(OutboundRefused, match=r"^127\.0\.0\.1 is a loopback address: refused as a target$"):
            post_json(f"{scheme}://127.0.0.1:{target.port}/hook", {"event": "regressions"}, timeout=TIMEOUT)

    assert target.connections == 0


def test_a_loopback_target_is_reached_when_private_targets_are_allowed():
    payload = {"event": "regressions", "run": 7, "text": "1 new alert"}

    with Target(status=204) as target:
        status = post_json(f"{target.url}/hook?key=1", payload, timeout=TIMEOUT, allow_private=True)

    assert status == 204
    [(method, path, headers, body)] = target.requests
    assert (method, path) == ("POST", "/hook?key=1")
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == payload


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_raises(status):
    """Even to a target that is allowed: the second server is never connected to."""
    with Target() as elsewhere, Target(status, {"Location": f"{elsewhere.url}/internal"}) as target:
        with pytest.raises(OutboundHTTPError) as raised:
            post_json(f"{target.url}/hook", {"event": "regressions"}, timeout=TIMEOUT, allow_private=True)

    assert raised.value.status == status
    assert str(raised.value).startswith(f"127.0.0.1 answered {status} ")
    assert str(raised.value).endswith(f", a redirect to {elsewhere.url}/…: redirects are not followed (give the "
                                      "address it leads to)")
    assert [method for method, *_ in target.requests] == ["POST"]
    assert elsewhere.connections == 0


@pytest.mark.parametrize("status", [400, 404, 500, 503])
def test_an_error_status_raises_with_the_status(status):
    with Target(status) as target:
        with pytest.raises(OutboundHTTPError, match=rf"^127\.0\.0\.1 answered {status} ") as raised:
            post_json(f"{target.url}/hook", {}, timeout=TIMEOUT, allow_private=True)

    assert raised.value.status == status


def test_a_name_that_resolves_to_loopback_by_the_time_of_the_call_is_refused(resolver):
    """DNS rebinding: public when the address was checked, loopback when the webhook is called."""
    with Target() as target:
        resolver["hooks.example.org"] = [PUBLIC]
        check_webhook_url(f"http://hooks.example.org:{target.port}/hook")
        resolver["hooks.example.org"] = [PUBLIC, "127.0.0.1"]

        with pytest.raises(OutboundRefused, match="^hooks.example.org is at 127.0.0.1, a loopback address: "):
            post_json(f"http://hooks.example.org:{target.port}/hook", {}, timeout=TIMEOUT)
        resolver["hooks.example.org"] = ["127.0.0.1"]
        reached = post_json(f"http://hooks.example.org:{target.port}/hook", {}, timeout=TIMEOUT, allow_private=True)

    assert target.connections == 1 and reached == 200
    assert target.requests[0][2]["Host"] == f"hooks.example.org:{target.port}"


@pytest.mark.parametrize("url", ["ftp://example.org/hook", "file:///etc/passwd", "gopher://example.org/",
                                 "//example.org/hook", "http:///hook", "https://example.org:99999/hook"])
def test_only_http_and_https_addresses_with_a_host_are_called(url):
    with pytest.raises(OutboundRefused):
        post_json(url, {}, timeout=TIMEOUT)
    with pytest.raises(OutboundRefused):
        check_webhook_url(url)


@pytest.mark.parametrize(("url", "message"), [
    ("http://127.0.0.1:8000/hook", "127.0.0.1 is a loopback address: refused as a target"),
    ("http://[::1]/hook", "::1 is a loopback address: refused as a target"),
    ("http://[::ffff:127.0.0.1]/hook", "::ffff:127.0.0.1 is a loopback address (127.0.0.1): refused as a target"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local or cloud metadata address"),
    ("https://10.0.0.1/hook", "10.0.0.1 is a private address"),
    ("http://0.0.0.0:8000/", "0.0.0.0 is an unspecified address"),
    ("https://chat.internal.example.org/hook", "chat.internal.example.org is at 192.168.1.1, a private address"),
    ("https://mixed.example.org/hook", "mixed.example.org is at 172.16.0.1, a private address"),
    ("https://gone.example.org/hook", "gone.example.org cannot be resolved ("),
    ("ftp://example.org/hook", "only http:// and https:// addresses are allowed, not ftp://"),
])
def test_a_webhook_address_is_checked_where_it_is_entered(resolver, url, message):
    resolver.update({"chat.internal.example.org": ["192.168.1.1"], "mixed.example.org": [PUBLIC, "172.16.0.1"],
                     "gone.example.org": []})

    with pytest.raises(ValueError, match="^" + re.escape(message)):
        check_webhook_url(url)


def test_a_public_webhook_address_passes_and_a_private_one_when_allowed(resolver):
    resolver.update({"hooks.example.org": [PUBLIC], "chat.internal.example.org": ["192.168.1.1"]})

    check_webhook_url("https://hooks.example.org/services/T0/B0/secret")
    check_webhook_url(f"http://{PUBLIC}:8080/hook")
    check_webhook_url("http://chat.internal.example.org/hook", allow_private=True)
    check_webhook_url("http://127.0.0.1:8065/hooks/x", allow_private=True)


def test_the_module_imports_without_django():
    done = subprocess.run([sys.executable, "-c", "import sys, results.outbound; assert 'django' not in sys.modules"],
                          cwd=ROOT, capture_output=True, text=True)

    assert done.returncode == 0, done.stderr
