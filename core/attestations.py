"""Signed attestations of what the registry scanned: after each scan it signs a JWS (ES256) over
`{digests, verdict, scanned_at, scanner, scanner_version, policy}` with its attestation key, so a client
can check, with the published keys alone, that the content it loads is what the registry scanned and
approved, whatever carried it there.

Keys come from the environment: ATTESTATION_KEY_FILES, PEM files of P-256 private keys, the first signing
and every one published (`jwks()`), so attestations signed before a rotation still verify. A key file that
does not exist is created (0600) on first use, as the other secrets are, so a single host needs nothing."""

from __future__ import annotations

import base64
import hashlib
import os
from functools import lru_cache
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings

ALGORITHM = "ES256"
TYPE = "attestation+jwt"


@lru_cache(maxsize=8)
def _keys(paths: tuple[str, ...]) -> tuple[tuple[str, ec.EllipticCurvePrivateKey], ...]:
    return tuple((_kid(key), key) for key in (_read_or_create(Path(path)) for path in paths))


def _configured():
    paths = tuple(path.strip() for path in settings.ATTESTATION_KEY_FILES if path.strip())
    return _keys(paths)


def _read_or_create(path: Path) -> ec.EllipticCurvePrivateKey:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(pem)
        except FileExistsError:
            pass  # another process made it first: read theirs
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ValueError(f"{path} is not a P-256 private key (ATTESTATION_KEY_FILES).")
    return key


def _kid(key: ec.EllipticCurvePrivateKey) -> str:
    """The key's RFC 7638 thumbprint."""
    numbers = key.public_key().public_numbers()
    x, y = (_b64(value.to_bytes(32, "big")) for value in (numbers.x, numbers.y))
    canonical = f'{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}'
    return _b64(hashlib.sha256(canonical.encode()).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(claims: dict) -> str:
    """A compact JWS over `claims`, by the current attestation key."""
    kid, key = _configured()[0]
    return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": kid, "typ": TYPE})


def verified(token: str) -> dict | None:
    """The claims of a JWS one of the attestation keys signed, or None (a bad signature, an unknown key,
    not a JWS at all)."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
        key = next((key for key_id, key in _configured() if key_id == kid), None)
        if key is None:
            return None
        return jwt.decode(token, key.public_key(), algorithms=[ALGORITHM], options={"verify_aud": False})
    except jwt.PyJWTError:
        return None


def jwks() -> dict:
    """Every attestation key's public half, as a JWK Set."""
    keys = []
    for kid, key in _configured():
        numbers = key.public_key().public_numbers()
        keys.append(
            {
                "kty": "EC",
                "crv": "P-256",
                "x": _b64(numbers.x.to_bytes(32, "big")),
                "y": _b64(numbers.y.to_bytes(32, "big")),
                "kid": kid,
                "alg": ALGORITHM,
                "use": "sig",
            }
        )
    return {"keys": keys}


# Who signed what, by content digest: each app that attests content registers a finder in its
# `AppConfig.ready()` (skills: a version's file set or archive; servers: a pinned tool set), so one lookup
# (`GET /api/attestations/<sha256>`) serves them all.
FINDERS: list = []


def meta_key() -> str:
    """The `_meta` key every listing entry carries its attestation under (the registry's own prefix)."""
    return f"io.{settings.REGISTRY_NAMESPACE}/attestation"


def attested(sha256: str) -> str | None:
    """The attestation the registry signed over the content of digest `sha256`, or None."""
    return next((found for finder in FINDERS if (found := finder(sha256))), None)
