"""Where a target's upstream credential comes from, the fields every kind that holds one shares (servers and
A2A agents): the mode (servers/upstream_auth.py), the header a user's secret goes in, and the operator's
shared headers, sealed at rest (core/sealing.py) like every user's credential.

Shared headers are bound to the kind of target and the origin of its upstream URL: a sealed value copied to
a target elsewhere does not open there, and a target moved to another origin has headers that no longer
open (the services drop them, audited, when an edit moves the origin; one moved behind the registry's back
gets CredentialMissing from the resolver) until an operator enters them again, so the operator's
credential never reaches an address it was not given for. `headers` reads and writes them in plain text,
in memory only; a save seals what was set."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.db import models

from core import sealing
from core.public_url import origin_of
from servers.choices import USER_CREDENTIAL_MODES, UpstreamAuth
from servers.upstream_auth import mode_problems


class SharedHeadersLost(Exception):
    """Shared headers sealed for another place (moved behind the registry's back) or by a key gone."""


def context_of(kind: str, url: str) -> str:
    return f"shared-headers|{kind}|{origin_of(url)}"


def sealed_headers_of(kind: str, url: str, headers: dict) -> str:
    """`headers` sealed for a target of `kind` at `url` ('' for none)."""
    if not headers:
        return ""
    plain = json.dumps({str(k): str(v) for k, v in headers.items()}, separators=(",", ":"))
    return sealing.seal(plain.encode(), context=context_of(kind, url))


def opened_headers(kind: str, url: str, sealed: str) -> dict[str, str]:
    """The headers `sealed` holds for a target of `kind` at `url` (SharedHeadersLost when they do not
    open there)."""
    if not sealed:
        return {}
    try:
        return json.loads(sealing.unseal(sealed, context=context_of(kind, url)))
    except sealing.Unsealable as lost:
        raise SharedHeadersLost(str(lost)) from None


def moved_origin(target, fields: dict, changed: list[str], old_origin: str) -> tuple[list[str], dict]:
    """After an edit's `changed` fields were applied to `target` (a server or an agent): when its upstream
    URL moved to another origin and the edit set no headers itself, its shared headers are dropped and its
    mode falls back to none, so whoever may edit a target can never send the operator's credential to an
    address of theirs. (the changed fields now, what the audit row says of it)."""
    detail: dict = {}
    if target.UPSTREAM_URL_FIELD not in changed or origin_of(target.upstream_url) == old_origin:
        return changed, detail
    detail["origin"] = {"from": old_origin, "to": origin_of(target.upstream_url)}
    if "headers" not in fields and target.has_headers:
        try:
            dropped = opened_headers(target.TARGET_KIND, old_origin, target.sealed_headers)
            detail["headers_dropped"] = sorted(dropped)
        except SharedHeadersLost:
            detail["headers_dropped"] = ["(no longer opened)"]
        target.headers = {}
        target.upstream_auth = UpstreamAuth.NONE
        changed = sorted({*changed, "headers", "upstream_auth"})
    return changed, detail


class UpstreamAuthFields(models.Model):
    """The credential fields of a target the gateway carries traffic to. A model sets `TARGET_KIND` (its
    kind in core/targets.py, also the name of its key on connections' UpstreamCredential) and
    `UPSTREAM_URL_FIELD` (the field holding its upstream URL)."""

    TARGET_KIND = ""
    UPSTREAM_URL_FIELD = ""

    upstream_auth = models.CharField(max_length=32, choices=UpstreamAuth.choices, default=UpstreamAuth.NONE)
    user_secret_header = models.CharField(
        max_length=300, blank=True, help_text='for each user\'s secret, e.g. "Authorization: Bearer {secret}"'
    )
    sealed_headers = models.TextField(blank=True, default="", editable=False)

    class Meta:
        abstract = True

    def __init__(self, *args, **kwargs):
        self._plain_headers = None  # opened (or set) headers, in memory only
        self._headers_changed = False
        super().__init__(*args, **kwargs)

    def save(self, *args, **kwargs):
        update_fields = kwargs.get("update_fields")
        if update_fields is not None:  # `headers` is what the services name; the column is sealed_headers
            kwargs["update_fields"] = {"sealed_headers" if f == "headers" else f for f in update_fields}
        if self._headers_changed:
            self.sealed_headers = sealed_headers_of(self.TARGET_KIND, self.upstream_url, self._plain_headers)
            if update_fields is not None:
                kwargs["update_fields"].add("sealed_headers")
        super().save(*args, **kwargs)
        self._headers_changed = False

    def clean(self):
        super().clean()
        if self.upstream_auth != UpstreamAuth.USER_SECRET:
            self.user_secret_header = ""
        problems = mode_problems(
            mode=self.upstream_auth,
            headers=self.has_headers,
            secret_header_value=self.user_secret_header,
            url=self.upstream_url,
            url_field=self.UPSTREAM_URL_FIELD,
        )
        if problems:
            raise ValidationError(problems)

    def refresh_from_db(self, using=None, fields=None, from_queryset=None):
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)
        if fields is None or {"sealed_headers", self.UPSTREAM_URL_FIELD} & set(fields):
            self._plain_headers, self._headers_changed = None, False  # (a deferred field's load is not)

    @property
    def upstream_url(self) -> str:
        return getattr(self, self.UPSTREAM_URL_FIELD)

    @property
    def headers(self) -> dict[str, str]:
        """The shared headers in plain text ({} when they no longer open: `shared_headers` says why)."""
        try:
            return self.shared_headers()
        except SharedHeadersLost:
            return {}

    @headers.setter
    def headers(self, value) -> None:
        self._plain_headers = {str(k): str(v) for k, v in (value or {}).items()}
        self._headers_changed = True

    def shared_headers(self) -> dict[str, str]:
        """The shared headers in plain text; SharedHeadersLost when they do not open for this target."""
        if self._plain_headers is None:
            self._plain_headers = opened_headers(self.TARGET_KIND, self.upstream_url, self.sealed_headers)
        return dict(self._plain_headers)

    @property
    def has_headers(self) -> bool:
        return bool(self._plain_headers) if self._headers_changed else bool(self.sealed_headers)

    @property
    def needs_user_credential(self) -> bool:
        return self.upstream_auth in USER_CREDENTIAL_MODES
