"""Requests this server makes to an address a user gave (a project's webhook), kept away from what only the
server can reach: loopback, link-local (where cloud metadata answers) and private networks, unless the operator
allows private targets.

:func:`check_webhook_url` is the first check, where the address is entered. The guard is :func:`post_json`: it
judges the addresses the host name resolves to when it connects, before any packet is sent, and the address the
socket is connected to, so a name that resolves elsewhere by then (DNS rebinding) is still refused. It never
follows a redirect and takes no proxy from the environment (:mod:`http.client` reads none). Standard library
only, so that it is tested without Django.
"""

import http.client
import ipaddress
import json
import socket
import ssl
import urllib.parse
from collections.abc import Callable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}
USER_AGENT = "PilotWeb"
# Cloud metadata services outside 169.254/16 (AWS's IPv6 endpoint, Alibaba Cloud's): refused even when private
# targets are allowed, as link-local addresses are.
METADATA_ADDRESSES = frozenset(map(ipaddress.ip_address, ("fd00:ec2::254", "100.100.100.200")))
# NAT64's well-known prefix: its last 32 bits are the IPv4 address reached (RFC 6052).
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")


class OutboundRefused(ValueError):
    """A target refused before anything is sent to it: not an http(s) address, or a host at a refused address
    (or, when an address is checked, one that does not resolve)."""


class OutboundHTTPError(Exception):
    """The target answered with a status other than 2xx; a redirect (3xx) is one, as it is never followed."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message, status)
        self.status = status

    def __str__(self) -> str:
        return self.args[0]


def address_refusal(address: str | IPAddress, *, allow_private: bool = False) -> str | None:
    """Why a connection to an IP address is refused, in words (``"a loopback address"``); None when allowed.

    Parameters
    ----------
    address
        An IPv4 or IPv6 address (an IPv6 one may carry a ``%scope``). An IPv6 form that carries an IPv4 address
        (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) is judged by that address too.
    allow_private
        Allow loopback, private (RFC 1918, ``fc00::/7``), shared and reserved addresses: what a server on the
        operator's own network needs. Unspecified, multicast, link-local (``169.254/16``, ``fe80::/10``) and cloud
        metadata addresses stay refused: no webhook lives there.

    Returns
    -------
    str or None
        The reason, or None for an address allowed: by default, only what :mod:`ipaddress` calls global.
    """
    ip = ipaddress.ip_address(address)
    for reached in _addresses_reached(ip):
        reason = _refusal(reached, allow_private=allow_private)
        if reason:
            return reason if reached == ip else f"{reason} ({reached})"
    return None


def _addresses_reached(ip: IPAddress) -> list[IPAddress]:
    if ip.version == 4:
        return [ip]
    if ip.ipv4_mapped:
        # Only the IPv4 address counts: ipaddress calls every ::ffff: address reserved, public ones too.
        return [ip.ipv4_mapped]
    if ip in NAT64_PREFIX:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)]
    return [ip, ip.sixtofour] if ip.sixtofour else [ip]


def _refusal(ip: IPAddress, *, allow_private: bool) -> str | None:
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_link_local or ip in METADATA_ADDRESSES:
        return "a link-local or cloud metadata address"
    if allow_private:
        return None
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "not a globally reachable address"
    return None


def check_webhook_url(url: str, *, allow_private: bool = False) -> None:
    """Refuse a webhook address where it is entered (a form, a model's validation): raises
    :class:`OutboundRefused`, a ValueError, when its scheme is not http or https, or when its host (an IP
    address or a name) is at a refused address, any of those it resolves to now, or does not resolve. A first
    check only: a name may resolve elsewhere later, which :func:`post_json` refuses when it connects."""
    _scheme, host, port, _path = _target(url)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:  # UnicodeError: a name that cannot be IDNA-encoded
        raise OutboundRefused(f"{host} cannot be resolved ({getattr(error, 'strerror', None) or error})") from None
    _refuse(host, [sockaddr[0] for *_, sockaddr in found], allow_private=allow_private)


def post_json(url: str, payload: object, *, timeout: float, allow_private: bool = False) -> int:
    """POST ``payload`` as JSON to an http(s) address and return the answer's status (2xx).

    Parameters
    ----------
    url
        The target; only its scheme, host, port, path and query are used.
    payload
        Anything :func:`json.dumps` writes, NaN and infinities excepted (a ValueError): no JSON parser reads them.
    timeout
        Seconds for connecting and for each read, per address tried.
    allow_private
        As :func:`address_refusal` says.

    Raises
    ------
    OutboundRefused
        Not an http(s) address, or its host resolves, when connecting, to a refused address (no packet is sent
        to any), or the connected peer is one. The message names the host and the address, never the path
        (a webhook's path is often its secret).
    OutboundHTTPError
        A status other than 2xx, with ``status``: a 3xx too, as redirects are not followed.
    OSError
        The host does not resolve (:class:`socket.gaierror`), the connection fails or times out, TLS fails.
    http.client.HTTPException
        The answer is not HTTP.
    """
    scheme, host, port, path = _target(url)
    body = json.dumps(payload, allow_nan=False).encode()
    if scheme == "https":
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl.create_default_context())
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    connection._create_connection = _guarded_connector(allow_private=allow_private)
    try:
        connection.request("POST", path, body=body,
                           headers={"Content-Type": "application/json", "User-Agent": USER_AGENT})
        with connection.getresponse() as response:
            status, reason, location = response.status, response.reason, response.getheader("Location")
    finally:
        connection.close()
    if 300 <= status < 400:
        target = f" to {_origin(urllib.parse.urljoin(url, location))}/…" if location else ""
        raise OutboundHTTPError(f"{host} answered {status} {reason}, a redirect{target}: redirects are not "
                                "followed (give the address it leads to)", status)
    if not 200 <= status < 300:
        raise OutboundHTTPError(f"{host} answered {status} {reason}", status)
    return status


def _target(url: str) -> tuple[str, str, int, str]:
    """Scheme, host, port and request path (with the query) of an http(s) address."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS:
        given = f"{parts.scheme}://" if parts.scheme else "an address without a scheme"
        raise OutboundRefused(f"only http:// and https:// addresses are allowed, not {given}")
    if not parts.hostname:
        raise OutboundRefused("the address names no host")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise OutboundRefused(f"the address of {parts.hostname} has an invalid port") from None
    return parts.scheme, parts.hostname, port, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _origin(url: str) -> str:
    """``scheme://host:port`` of an address: what a message may show of it."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _refuse(host: str, addresses: list[str], *, allow_private: bool) -> None:
    for address in addresses:
        reason = address_refusal(address, allow_private=allow_private)
        if reason:
            where = f"{address} is" if address == host else f"{host} is at {address},"
            raise OutboundRefused(f"{where} {reason}: refused as a target")


def _guarded_connector(*, allow_private: bool) -> Callable[..., socket.socket]:
    """A connection factory for :mod:`http.client` (its ``_create_connection``) that applies the address rule
    where the connection is made."""

    def connect(address: tuple[str, int], timeout: float, *_source_address: object) -> socket.socket:
        host, port = address
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        # Every address is judged before any is tried: not even a SYN goes to a refused one, whose answer
        # (refused or not) would tell which of its ports are open.
        _refuse(host, [sockaddr[0] for *_, sockaddr in found], allow_private=allow_private)
        failures: list[OSError] = []
        for family, kind, protocol, _, sockaddr in found:
            sock = socket.socket(family, kind, protocol)
            try:
                sock.settimeout(timeout)
                sock.connect(sockaddr)
                # The address actually connected to is what counts, whatever was resolved.
                _refuse(host, [sock.getpeername()[0]], allow_private=allow_private)
            except OSError as failure:
                sock.close()
                failures.append(failure)
            except OutboundRefused:
                sock.close()
                raise
            else:
                return sock
        raise failures[-1]  # getaddrinfo answers at least one address or raises

    return connect
