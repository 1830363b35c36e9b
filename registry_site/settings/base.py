"""Settings shared by every environment. Everything exists here; production only tightens."""

import os

from registry_site.settings.env import BASE_DIR, ConfigurationError, env, env_required
from registry_site.settings.services import (  # noqa: F401 (re-exported as settings)
    DATABASE_URL,
    EMBEDDED_DATABASE,
    EMBEDDED_REDIS,
    REDIS_SENTINEL_MASTER,
    REDIS_SENTINEL_PASSWORD,
    REDIS_TARGET,
    REDIS_URL,
    VAR_DIR,
)
from runtime import embedded

DATABASES = {"default": env.db_url_config(DATABASE_URL)}
# A psycopg connection pool per process: ASGI runs each request in a thread, so persistent
# per-thread connections (CONN_MAX_AGE) would leak; the pool reuses them safely instead.
DATABASES["default"]["OPTIONS"] = {
    **DATABASES["default"].get("OPTIONS", {}),
    "connect_timeout": 5,
    "pool": {
        "min_size": 1,
        "max_size": env.int("DATABASE_POOL_MAX_SIZE", default=10),
        "timeout": 5,  # a request waits at most this long for a connection (and /health for its 503)
    },
}
# The pool checks a connection before lending it (one round trip), so after a PostgreSQL restart or
# failover no request gets a connection that died with the old server.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# -- core ------------------------------------------------------------------------------------------

if EMBEDDED_DATABASE:
    # Generated once under var/ so sessions and tokens survive restarts and all processes agree.
    SECRET_KEY = env.str("SECRET_KEY", default="") or embedded.read_or_create_secret(VAR_DIR / "secret_key")
else:
    SECRET_KEY = env_required("SECRET_KEY", "set it to a long random string shared by every process")

DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
CSRF_FAILURE_VIEW = "registry_site.views.csrf_failure"

INSTALLED_APPS = [
    "registry_site.admin_site.ConsoleAdminConfig",  # django.contrib.admin, arranged for operators
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "servestatic.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from here (no CDN, CSP 'self')
    "channels",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.socialaccount.providers.github",
    "oauth2_provider",
    "corsheaders",
    "registry_site",
    "core",
    "accounts",
    "servers",
    "connections",
    "skills",
    "virtual_servers",
    "limits",
    "gateway",
    "oauth",
    "catalog",
    "agents",
    "search",
    "discovery",
    "metrics",
]

MIDDLEWARE = [
    "registry_site.middleware.ServiceUrlconfMiddleware",
    "registry_site.middleware.RequestIdMiddleware",
    "registry_site.middleware.OutageMiddleware",
    "registry_site.middleware.UntrustedInputMiddleware",
    "registry_site.middleware.SecurityHeadersMiddleware",
    "corsheaders.middleware.CorsMiddleware",  # preflights answered before any authentication
    "django.middleware.security.SecurityMiddleware",
    "registry_site.static_files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "registry_site.middleware.ViewAsReadOnlyMiddleware",  # (after messages: a refused form gets one)
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "registry_site.urls"
ASGI_APPLICATION = "registry_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.viewing_as",
            ],
        },
    },
]

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # ServeStatic warns on every start without it
# ServeStatic (an async-capable WhiteNoise) serves straight from the source folders unless
# collectstatic has been run (production).
SERVESTATIC_USE_FINDERS = env.bool("SERVESTATIC_USE_FINDERS", default=True)

# -- input from outside (core/untrusted.py, registry_site/asgi_guard.py) ----------------------

# Request bodies larger than this are refused with 413 before they are read (both services' ASGI entries).
MAX_REQUEST_BODY_BYTES = env.int("MAX_REQUEST_BODY_BYTES", default=1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BODY_BYTES
# JSON deeper than this (objects and arrays) is refused with 400 on every surface.
JSON_MAX_DEPTH = env.int("JSON_MAX_DEPTH", default=64)
# Keys sealing upstream credentials at rest (core/sealing.py): base64 of 32 bytes each; the first seals,
# all open, so keys rotate (`manage.py reseal_credentials`). Empty: one key derived from SECRET_KEY.
CREDENTIAL_KEYS = env.list("CREDENTIAL_KEYS", default=[])
# Discovering an upstream server's sign-in (connections/oauth/discovery.py): authorization servers on
# private addresses only when listed here; http to loopback only for development; each document's deadline.
UPSTREAM_OAUTH_ALLOWED_HOSTS = env.list("UPSTREAM_OAUTH_ALLOWED_HOSTS", default=[])
UPSTREAM_OAUTH_ALLOW_LOOPBACK = env.bool("UPSTREAM_OAUTH_ALLOW_LOOPBACK", default=False)
UPSTREAM_OAUTH_FETCH_TIMEOUT_SECONDS = env.float("UPSTREAM_OAUTH_FETCH_TIMEOUT_SECONDS", default=10)
# Push-notification URLs a caller gives an A2A agent through the gateway (gateway/a2a/pushes.py): hosts
# on private or loopback addresses only when listed here; others must be public.
A2A_PUSH_ALLOWED_HOSTS = env.list("A2A_PUSH_ALLOWED_HOSTS", default=[])
# Agent listings and `?format=a2a` cards give each agent's gateway URL (`/<path>/a2a`); off: the agent's own
# URL only, for a registry used for discovery (the gateway still carries A2A for those who use it).
A2A_GATEWAY_URLS = env.bool("A2A_GATEWAY_URLS", default=True)
# A tool definition the scanner finds a high-severity problem in (servers/scanning.py) is never pinned by
# itself (first discovery, servers approved automatically): an operator approves it with an override.
TOOL_SCAN_HIGH_HOLDS = env.bool("TOOL_SCAN_HIGH_HOLDS", default=True)
# Agent Skills (docs/skills.md): what one skill may hold once unpacked.
SKILL_MAX_FILES = env.int("SKILL_MAX_FILES", default=200)
SKILL_MAX_BYTES = env.int("SKILL_MAX_BYTES", default=5 * 1024 * 1024)
# Skills published from a Git repository (skills/git_source.py): hosts with addresses that are not public
# allowed by name, loopback ones allowed in development, and the whole fetch's deadline.
SKILL_SOURCE_ALLOWED_HOSTS = env.list("SKILL_SOURCE_ALLOWED_HOSTS", default=[])
SKILL_SOURCE_ALLOW_LOOPBACK = env.bool("SKILL_SOURCE_ALLOW_LOOPBACK", default=False)
SKILL_SOURCE_TIMEOUT_SECONDS = env.int("SKILL_SOURCE_TIMEOUT_SECONDS", default=60)
# Traces (gateway/tracing.py): whether a tool call's arguments and result go on its span, redacted. The
# variable is the OpenTelemetry GenAI instrumentations' own.
TRACE_CAPTURE_CONTENT = env.bool("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", default=False)
# Signed attestations of scans (core/attestations.py): PEM files of P-256 keys, the first signing.
ATTESTATION_KEY_FILES = env.list("ATTESTATION_KEY_FILES", default=[str(VAR_DIR / "attestation_key.pem")])
# How late "last used" of tokens and applications may be: each process writes its notes this often.
LAST_USED_FLUSH_SECONDS = env.float("LAST_USED_FLUSH_SECONDS", default=60)

# Every page's Content-Security-Policy: scripts, styles and connections (websockets) from this origin only.
CONTENT_SECURITY_POLICY = env.str(
    "CONTENT_SECURITY_POLICY",
    default=(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
)
X_FRAME_OPTIONS = "DENY"

# -- sessions and cookies --------------------------------------------------------------------------

SESSION_COOKIE_AGE = 8 * 60 * 60
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# -- cache (Redis) ---------------------------------------------------------------------------------

# The cache shares the process's Redis connections (core/redis_clients.py), Sentinel included.
CACHES = {
    "default": {
        "BACKEND": "core.redis_cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "registry",
    }
}

# -- the registry ----------------------------------------------------------------------------------

REGISTRY_SERVICE_NAME = "mcp-gateway-registry"
REGISTRY_NAMESPACE = env.str("REGISTRY_NAMESPACE", default="mcpgateway")
# Public base URL of the gateway (what MCP clients connect to); unset: the URL the request came in on.
GATEWAY_PUBLIC_URL = env.str("GATEWAY_PUBLIC_URL", default="").rstrip("/")
# The built-in gateway (gateway/): upstream timeouts (a read may wait this long for the next
# bytes of an answer or stream); open exchanges per server origin and per caller, each per web process
# (gateway/fair_share.py: the one over its share gets 429 at once); the largest answer it reads whole to
# filter tool lists (gateway/streams.py). Browser origins: CORS_ALLOWED_ORIGINS (settings/oauth.py).
GATEWAY_CONNECT_TIMEOUT_SECONDS = env.float("GATEWAY_CONNECT_TIMEOUT_SECONDS", default=5.0)
GATEWAY_TIMEOUT_SECONDS = env.float("GATEWAY_TIMEOUT_SECONDS", default=300.0)
GATEWAY_MAX_CONNECTIONS = env.int("GATEWAY_MAX_CONNECTIONS", default=100)
GATEWAY_MAX_STREAMS_PER_CALLER = env.int("GATEWAY_MAX_STREAMS_PER_CALLER", default=32)
GATEWAY_MAX_REWRITE_BYTES = env.int("GATEWAY_MAX_REWRITE_BYTES", default=16 * 1024 * 1024)
# How long a virtual server's call of an A2A agent's tool waits for a task the agent is still working on
# (gateway/virtual/agent_tools.py), polling it, before answering that it is still working.
AGENT_TOOL_WAIT_SECONDS = env.float("AGENT_TOOL_WAIT_SECONDS", default=60.0)
# How long a virtual server's A2A face waits for a tool before it answers with a working task the client
# gets and cancels (gateway/virtual/a2a.py).
VIRTUAL_A2A_ANSWER_SECONDS = env.float("VIRTUAL_A2A_ANSWER_SECONDS", default=10.0)
DISCOVERY_CACHE_TTL = env.int("DISCOVERY_CACHE_TTL", default=300)
REGISTRY_HOST = env.str("REGISTRY_HOST", default="127.0.0.1")
REGISTRY_PORT = env.int("REGISTRY_PORT", default=8000)
# Web processes behind REGISTRY_PORT (uvicorn workers sharing the socket), one per core by default, and
# the threads each runs Django's requests in (registry_site/wsgi_bridge.py).
WEB_CONCURRENCY = env.int("WEB_CONCURRENCY", default=os.cpu_count() or 1)
WEB_THREADS = env.int("WEB_THREADS", default=4)
# On SIGTERM a web process stops accepting, lets requests in flight finish for this long, then closes what
# is still open (held streams, websockets) and exits: a client keeping a connection open never holds a
# shutdown or a rolling restart.
WEB_SHUTDOWN_GRACE_SECONDS = env.int("WEB_SHUTDOWN_GRACE_SECONDS", default=10)
# Addresses (or networks, `10.0.0.0/8`) of the proxies in front of the web processes whose
# X-Forwarded-For and X-Forwarded-Proto are believed (runtime/web_server.py); nobody's by default.
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=[])
# Fetches from parties the registry does not run (core/outbound.py) that one web process makes at once
# while callers wait (client metadata documents): below WEB_THREADS, so they never hold every thread.
OUTBOUND_FETCHES_PER_PROCESS = env.int("OUTBOUND_FETCHES_PER_PROCESS", default=max(1, WEB_THREADS // 2))
if not 1 <= OUTBOUND_FETCHES_PER_PROCESS < max(WEB_THREADS, 2):
    raise ConfigurationError("OUTBOUND_FETCHES_PER_PROCESS must be at least 1 and below WEB_THREADS")
ADMIN_USER = env.str("ADMIN_USER", default="admin")
ADMIN_PASSWORD = env.str("ADMIN_PASSWORD", default="")
ADMIN_PASSWORD_FILE = VAR_DIR / "admin_password"

# -- logging ---------------------------------------------------------------------------------------

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "pgserver": {"level": "WARNING"},
        # The MCP client logs a full traceback for every broken server it meets; the health check
        # already records a one-line reason in `health_detail`.
        "mcp.client": {"level": "CRITICAL"},
    },
}

from registry_site.settings.auth import *  # noqa: E402,F403
from registry_site.settings.catalog import *  # noqa: E402,F403
from registry_site.settings.celery import *  # noqa: E402,F403
from registry_site.settings.channels import *  # noqa: E402,F403
from registry_site.settings.embeddings import *  # noqa: E402,F403
from registry_site.settings.metrics import *  # noqa: E402,F403
from registry_site.settings.oauth import *  # noqa: E402,F403

# Client metadata documents are fetched within the process's cap, taken without waiting (core/outbound.py).
OAUTH2_PROVIDER["CIMD_MAX_CONCURRENT_FETCHES"] = OUTBOUND_FETCHES_PER_PROCESS  # noqa: F405

if GATEWAY_PUBLIC_URL:  # the issuer of the authorization server is the public URL, whatever the Host
    OAUTH2_PROVIDER["OIDC_ISS_ENDPOINT"] = GATEWAY_PUBLIC_URL  # noqa: F405
from registry_site.settings.rest import *  # noqa: E402,F403
