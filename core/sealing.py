"""Secrets sealed at rest: AES-256-GCM (`cryptography`), keys from CREDENTIAL_KEYS.

The first key seals; every key listed opens, so keys rotate: put a new key first, run
`manage.py reseal_credentials` (every row sealed again under it), then drop the old key. A sealed value
names its key by a short id, never the key.

The associated data (`context`) binds a sealed value to what it belongs to (a user, a server, a
purpose): a value copied into another row does not open there. Opened values live in memory only."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

VERSION = "v1"
NONCE_BYTES = 12


class Unsealable(Exception):
    """A sealed value that no configured key opens with this context (altered, moved or key gone)."""


def key_problem(value: str) -> str | None:
    """Why `value` is not a usable key (32 bytes, base64 or url-safe base64), or None."""
    try:
        raw = base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return "is not base64"
    return None if len(raw) == 32 else f"is {len(raw)} bytes; a key is 32 bytes (256 bits)"


def new_key() -> str:
    """A fresh key, as CREDENTIAL_KEYS takes it."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


@lru_cache(maxsize=4)
def _keys(configured: tuple[str, ...], secret_key: str) -> tuple[tuple[str, AESGCM], ...]:
    if not configured:  # a single-machine default: derived from SECRET_KEY (docs/auth.md)
        derived = hashlib.sha256(b"registry credential key\0" + secret_key.encode()).digest()
        return ((_key_id(derived), AESGCM(derived)),)
    keys = []
    for index, value in enumerate(configured):
        if problem := key_problem(value):
            raise ImproperlyConfigured(f"CREDENTIAL_KEYS: key {index + 1} {problem}.")
        raw = base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "=" * (-len(value) % 4))
        keys.append((_key_id(raw), AESGCM(raw)))
    return tuple(keys)


def _key_id(raw: bytes) -> str:
    return hashlib.sha256(b"key id\0" + raw).hexdigest()[:8]


def keys() -> tuple[tuple[str, AESGCM], ...]:
    return _keys(tuple(settings.CREDENTIAL_KEYS), settings.SECRET_KEY)


def seal(plaintext: bytes, *, context: str) -> str:
    """`plaintext` sealed under the newest key, bound to `context`."""
    key_id, cipher = keys()[0]
    nonce = os.urandom(NONCE_BYTES)
    sealed = cipher.encrypt(nonce, plaintext, context.encode())
    return f"{VERSION}.{key_id}.{base64.urlsafe_b64encode(nonce + sealed).decode()}"


def unseal(value: str, *, context: str) -> bytes:
    """The plaintext of a sealed value, if it was sealed with this context by a configured key."""
    try:
        version, key_id, body = value.split(".", 2)
        raw = base64.urlsafe_b64decode(body)
    except (ValueError, binascii.Error):
        raise Unsealable("not a sealed value") from None
    cipher = dict(keys()).get(key_id)
    if version != VERSION or cipher is None or len(raw) <= NONCE_BYTES:
        raise Unsealable("sealed by a key that is not configured" if cipher is None else "not a sealed value")
    try:
        return cipher.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], context.encode())
    except InvalidTag:
        raise Unsealable("altered, or sealed for another owner") from None


def sealed_with_newest(value: str) -> bool:
    return value.split(".", 2)[1:2] == [keys()[0][0]]
