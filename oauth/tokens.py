"""The tokens this authorization server issues: random, with a prefix that tells them apart from the
registry's JWTs at a glance (and to secret scanners). Only their SHA-256 checksums are stored."""

import secrets

ACCESS_PREFIX = "mcpr_at_"
REFRESH_PREFIX = "mcpr_rt_"


def access_token(request, refresh_token: bool = False) -> str:
    return ACCESS_PREFIX + secrets.token_urlsafe(32)


def refresh_token(request, refresh_token: bool = False) -> str:
    return REFRESH_PREFIX + secrets.token_urlsafe(32)


def is_access_token(raw: str) -> bool:
    return raw.startswith(ACCESS_PREFIX)
