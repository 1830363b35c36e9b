"""Start-up checks that turn an unusable configuration into one line naming the variable to fix."""

import socket

import psycopg
import redis
from django.conf import settings
from django.db import connection

from core import redis_clients


class PreflightError(Exception):
    """One line an operator can act on."""


def _where(embedded: bool, name: str) -> str:
    return f"the embedded server under {settings.VAR_DIR}" if embedded else name


def check_database() -> None:
    """Connect once, outside the pool (which would retry quietly), and look for pgvector."""
    hint = "check the URL, or unset DATABASE_URL to use the embedded PostgreSQL"
    try:
        with psycopg.connect(**connection.get_connection_params()) as conn:
            has_vector = conn.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split()) or exc.__class__.__name__
        raise PreflightError(
            f"DATABASE_URL: cannot connect to {_where(settings.EMBEDDED_DATABASE, 'the database')}"
            f" ({reason}); {hint}"
        ) from exc
    if not has_vector:
        raise PreflightError(
            "DATABASE_URL: the PostgreSQL server has no 'vector' extension; install pgvector on it"
        )


def check_redis() -> None:
    try:
        redis_clients.sync_client().ping()
    except redis.RedisError as exc:
        hint = "check the URL, or unset REDIS_URL to use the embedded Redis"
        raise PreflightError(
            f"REDIS_URL: cannot reach {_where(settings.EMBEDDED_REDIS, 'Redis')} ({exc}); {hint}"
        ) from exc


def check_port_free(variable: str, host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise PreflightError(
                f"{variable}: port {port} on {host} is not available ({exc.strerror}); "
                f"stop what uses it or set {variable} to another port"
            ) from exc
