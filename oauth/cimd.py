"""Fetching Client ID Metadata Documents: django-oauth-toolkit's SSRF-hardened fetcher (https only,
public addresses only, no redirects, bounded time and size, cached, backed off on failure), with one
addition for development: OAUTH_CIMD_ALLOW_LOOPBACK lets a document be served on a loopback address.
It is still fetched over https, with the same time and size bounds; no other internal address is ever
reachable."""

from __future__ import annotations

import ipaddress
import socket
import ssl

import urllib3
from django.conf import settings
from oauth2_provider import cimd


def _loopback_only(hostname: str, port: int) -> bool:
    """Every address `hostname` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(hostname, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        return False
    addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    return bool(addresses) and all(address.is_loopback for address in addresses)


class MetadataFetcher(cimd.SafeMetadataFetcher):
    def fetch(self, client_id):
        parsed = cimd._validate_client_id_url(client_id)  # https, a host, a path, no dot segments
        port = parsed.port or 443
        if not (settings.OAUTH_CIMD_ALLOW_LOOPBACK and _loopback_only(parsed.hostname, port)):
            return super().fetch(client_id)
        timeout = cimd.oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS  # OAUTH_CIMD_TIMEOUT_SECONDS
        pool = urllib3.HTTPSConnectionPool(
            host=parsed.hostname,
            port=port,
            timeout=urllib3.Timeout(connect=timeout, read=timeout, total=timeout),
            retries=False,
            maxsize=1,
            ssl_context=ssl.create_default_context(),
        )
        path = parsed.path + (f"?{parsed.query}" if parsed.query else "")
        try:
            response = pool.urlopen(
                "GET", path, headers={"Accept": "application/json"}, redirect=False, preload_content=False
            )
            try:
                return self._read_document(response)
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise cimd.CIMDError(f"could not fetch client_id document: {exc}") from exc
        finally:
            pool.close()
