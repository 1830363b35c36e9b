"""The registry as the OAuth 2.1 authorization server of its gateway (django-oauth-toolkit, `oauth/`), and
the browser origins allowed to read it (django-cors-headers; the gateway follows the same rule)."""

from registry_site.settings.env import ConfigurationError, env

# -- the authorization server (docs/auth.md) ---------------------------------------------------------

# Bearer tokens issued by an app above accounts, each turned into a principal by the function named here
# (accounts/authentication.py asks each in turn; the registry's own JWTs and an identity provider's are
# accounts' own).
BEARER_TOKEN_RESOLVERS = ["oauth.principals.principal_from_access_token"]

OAUTH_ACCESS_TOKEN_SECONDS = env.int("OAUTH_ACCESS_TOKEN_SECONDS", default=3600)
OAUTH_REFRESH_TOKEN_DAYS = env.int("OAUTH_REFRESH_TOKEN_DAYS", default=30)
# Dynamic client registrations one address may make per hour, and how long a registration that never
# completed an authorization is kept.
OAUTH_REGISTRATIONS_PER_HOUR = env.int("OAUTH_REGISTRATIONS_PER_HOUR", default=20)
OAUTH_UNUSED_REGISTRATION_HOURS = env.int("OAUTH_UNUSED_REGISTRATION_HOURS", default=24)
# Client ID Metadata Documents are fetched over https from public addresses only; development may let
# loopback addresses serve them (still https; the CA comes from SSL_CERT_FILE like any OpenSSL client).
OAUTH_CIMD_ALLOW_LOOPBACK = env.bool("OAUTH_CIMD_ALLOW_LOOPBACK", default=False)
# The whole fetch of a document (connecting, headers, body), whatever the pace of its server.
OAUTH_CIMD_TIMEOUT_SECONDS = env.float("OAUTH_CIMD_TIMEOUT_SECONDS", default=5.0)
OAUTH_CIMD_MAX_BYTES = env.int("OAUTH_CIMD_MAX_BYTES", default=16 * 1024)
# The most redirect URIs one client may register (oauth/clients.py).
OAUTH_MAX_REDIRECT_URIS = env.int("OAUTH_MAX_REDIRECT_URIS", default=10)
# Redirect URI schemes a client may register besides http (loopback only) and https: the private-use
# schemes of the common MCP hosts (RFC 8252 section 7.1).
OAUTH_REDIRECT_SCHEMES = env.list(
    "OAUTH_REDIRECT_SCHEMES", default=["cursor", "vscode", "vscode-insiders", "windsurf"]
)
if OAUTH_ACCESS_TOKEN_SECONDS < 60 or OAUTH_REFRESH_TOKEN_DAYS < 1:
    raise ConfigurationError("OAUTH_ACCESS_TOKEN_SECONDS must be at least 60 and OAUTH_REFRESH_TOKEN_DAYS 1")

OAUTH2_PROVIDER = {
    # Two rights a token may carry; where it works is its resource (RFC 8707), what it may do there
    # the user's own rights narrowed on the consent page (oauth/models.py Consent).
    "SCOPES": {
        "mcp": "Use MCP servers through the gateway",
        "registry": "Use the registry's API as you",
    },
    "DEFAULT_SCOPES": ["mcp"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH_REFRESH_TOKEN_DAYS * 86400,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,  # a used refresh token presented again revokes its family
    "OAUTH2_VALIDATOR_CLASS": "oauth.validators.RegistryValidator",  # S256 challenges, code replay
    "OAUTH2_SERVER_CLASS": "oauth.grants.RegistryServer",  # and identity providers' assertions (ID-JAG)
    "ACCESS_TOKEN_GENERATOR": "oauth.tokens.access_token",
    "REFRESH_TOKEN_GENERATOR": "oauth.tokens.refresh_token",
    "PKCE_REQUIRED": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", *OAUTH_REDIRECT_SCHEMES],
    "ALLOW_LOCALHOST_LOOPBACK": True,  # http://localhost:<any port> as RFC 8252 allows 127.0.0.1
    # oauth/views/authorization.py decides when a remembered consent applies
    "REQUEST_APPROVAL_PROMPT": "force",
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": [
        "authorization_code",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_post", "client_secret_basic"],
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,  # S256 only
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,  # RFC 9207
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,  # tokens stored as SHA-256 checksums only
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "oauth.cimd.MetadataFetcher",
    "CIMD_FETCH_TIMEOUT_SECONDS": OAUTH_CIMD_TIMEOUT_SECONDS,
    "CIMD_MAX_DOCUMENT_SIZE": OAUTH_CIMD_MAX_BYTES,
    "OAUTH2_PROTECTED_RESOURCE_NAME": "MCP Gateway Registry",
}
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"

# -- browser origins (CORS) --------------------------------------------------------------------------

# Origins whose pages may call /v0.1, /v0, the OAuth endpoints and the gateway (https://vscode.dev).
# The metadata documents (/.well-known/...) answer every origin.
CORS_ALLOWED_ORIGINS = [origin.strip().rstrip("/") for origin in env.list("CORS_ALLOWED_ORIGINS", default=[])]
CORS_URLS_REGEX = r"^/(v0\.1|v0|oauth|\.well-known|token)(/|$)"
CORS_ALLOW_CREDENTIALS = False  # bearer tokens, never cookies, cross origin
CORS_ALLOW_HEADERS = (
    "accept",
    "authorization",
    "content-type",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "mcp-method",
    "mcp-name",
    "x-request-id",
)
CORS_EXPOSE_HEADERS = ["Mcp-Session-Id", "WWW-Authenticate", "X-Request-ID", "Retry-After"]
CORS_PREFLIGHT_MAX_AGE = 3600

# Anonymous callers may list the servers of the `public` group's scopes (a public grant).
PUBLIC_LISTING = env.bool("PUBLIC_LISTING", default=False)
