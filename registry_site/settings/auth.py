"""Identity: form and identity-provider logins (allauth), registry-issued JWTs (simplejwt), tokens of
an external OpenID issuer, service accounts, and the limits on logins and token issuing."""

from datetime import timedelta

from registry_site.settings.env import ConfigurationError, env, env_required
from registry_site.settings.services import EMBEDDED_DATABASE, VAR_DIR
from runtime import embedded

AUTHENTICATION_BACKENDS = [
    "accounts.backends.LimitedPasswordBackend",  # passwords, with the login failure limits
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "/login"
LOGIN_REDIRECT_URL = "/api/auth/auth/callback"  # where allauth lands after an identity-provider login

# -- registry-issued tokens -------------------------------------------------------------------------

if EMBEDDED_DATABASE:
    JWT_SIGNING_KEY = env.str("JWT_SIGNING_KEY", default="") or embedded.read_or_create_secret(
        VAR_DIR / "jwt_signing_key"
    )
else:
    JWT_SIGNING_KEY = env_required(
        "JWT_SIGNING_KEY", "set it to a long random string shared by every process"
    )

TOKEN_ISSUER = "mcp-gateway-registry"
TOKEN_DEFAULT_HOURS = env.int("TOKEN_DEFAULT_HOURS", default=8)
TOKEN_MAX_HOURS = env.int("TOKEN_MAX_HOURS", default=24)
TOKEN_ISSUE_RATE_PER_MINUTE = env.int("TOKEN_ISSUE_RATE_PER_MINUTE", default=10)
SERVICE_TOKEN_LIFETIME_SECONDS = env.int("SERVICE_TOKEN_LIFETIME_SECONDS", default=300)
if not 300 <= SERVICE_TOKEN_LIFETIME_SECONDS <= 900:
    raise ConfigurationError("SERVICE_TOKEN_LIFETIME_SECONDS must be between 300 and 900 (5 to 15 minutes)")
if not 1 <= TOKEN_DEFAULT_HOURS <= TOKEN_MAX_HOURS:
    raise ConfigurationError("TOKEN_DEFAULT_HOURS must be between 1 and TOKEN_MAX_HOURS")
# The service account whose token GET /api/admin/tokens hands to admins (a username).
REGISTRY_SERVICE_ACCOUNT = env.str("REGISTRY_SERVICE_ACCOUNT", default="")

SIMPLE_JWT = {
    "ALGORITHM": "HS256",
    "SIGNING_KEY": JWT_SIGNING_KEY,
    "ISSUER": TOKEN_ISSUER,
    "USER_ID_FIELD": "username",
    "USER_ID_CLAIM": "sub",
    "ACCESS_TOKEN_LIFETIME": timedelta(hours=TOKEN_DEFAULT_HOURS),
    "UPDATE_LAST_LOGIN": False,
}

# -- an external OpenID issuer's access tokens --------------------------------------------------------

OIDC_TOKEN_ISSUER = env.str("OIDC_TOKEN_ISSUER", default="")  # unset: only registry tokens are accepted
OIDC_TOKEN_AUDIENCE = env.str("OIDC_TOKEN_AUDIENCE", default="")
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", default="groups")
OIDC_USERNAME_CLAIM = env.str("OIDC_USERNAME_CLAIM", default="preferred_username")
if OIDC_TOKEN_ISSUER and not OIDC_TOKEN_AUDIENCE:
    raise ConfigurationError("OIDC_TOKEN_AUDIENCE is not set: tokens of OIDC_TOKEN_ISSUER need an audience")

# -- login limits -------------------------------------------------------------------------------------

LOGIN_FAILURES_PER_USER = env.int("LOGIN_FAILURES_PER_USER", default=5)
LOGIN_FAILURES_PER_ADDRESS = env.int("LOGIN_FAILURES_PER_ADDRESS", default=20)
LOGIN_FAILURE_WINDOW_SECONDS = env.int("LOGIN_FAILURE_WINDOW_SECONDS", default=900)

# -- identity-provider logins (django-allauth) -------------------------------------------------------


def _oidc_app(provider_id: str, name: str, server_url: str, prefix: str) -> dict:
    return {
        "provider_id": provider_id,
        "name": name,
        "client_id": env_required(f"{prefix}_CLIENT_ID", f"needed because {prefix} login is configured"),
        "secret": env_required(f"{prefix}_CLIENT_SECRET", f"needed because {prefix} login is configured"),
        "settings": {"server_url": server_url, "oauth_pkce_enabled": True},
    }


# Keycloak: login (with KEYCLOAK_CLIENT_ID/SECRET) and, with an admin client, the group operations of
# the internal API (`accounts/idp_admin.py`); without the admin client those answer idp_not_configured.
KEYCLOAK_URL = env.str("KEYCLOAK_URL", default="").rstrip("/")
KEYCLOAK_REALM = env.str("KEYCLOAK_REALM", default="mcp-gateway")
KEYCLOAK_ADMIN_CLIENT_ID = env.str("KEYCLOAK_ADMIN_CLIENT_ID", default="")
KEYCLOAK_ADMIN_CLIENT_SECRET = env.str("KEYCLOAK_ADMIN_CLIENT_SECRET", default="")

_oidc_apps = []
if KEYCLOAK_URL:
    _oidc_apps.append(
        _oidc_app("keycloak", "Keycloak", f"{KEYCLOAK_URL}/realms/{KEYCLOAK_REALM}", "KEYCLOAK")
    )
if env.str("COGNITO_USER_POOL_ID", default=""):
    _region = env_required("COGNITO_REGION", "needed because COGNITO_USER_POOL_ID is set")
    _pool = env.str("COGNITO_USER_POOL_ID")
    _oidc_apps.append(
        _oidc_app(
            "cognito", "Amazon Cognito", f"https://cognito-idp.{_region}.amazonaws.com/{_pool}", "COGNITO"
        )
    )
if env.str("ENTRA_TENANT_ID", default=""):
    _tenant = env.str("ENTRA_TENANT_ID")
    _oidc_apps.append(
        _oidc_app("entra", "Microsoft Entra ID", f"https://login.microsoftonline.com/{_tenant}/v2.0", "ENTRA")
    )
if env.str("OIDC_ISSUER_URL", default=""):
    _oidc_apps.append(
        _oidc_app(
            "oidc",
            env.str("OIDC_DISPLAY_NAME", default="Single sign-on"),
            env.str("OIDC_ISSUER_URL").rstrip("/"),
            "OIDC",
        )
    )

SOCIALACCOUNT_PROVIDERS: dict = {}
if _oidc_apps:
    SOCIALACCOUNT_PROVIDERS["openid_connect"] = {
        "APPS": _oidc_apps,
        "SCOPE": ["openid", "profile", "email"],
        "OAUTH_PKCE_ENABLED": True,
    }
if env.str("GITHUB_CLIENT_ID", default=""):
    SOCIALACCOUNT_PROVIDERS["github"] = {
        "APPS": [
            {
                "client_id": env.str("GITHUB_CLIENT_ID"),
                "secret": env_required("GITHUB_CLIENT_SECRET", "needed because GITHUB_CLIENT_ID is set"),
            }
        ],
        "SCOPE": ["read:user", "user:email", "read:org"],
    }

SOCIALACCOUNT_ADAPTER = "accounts.adapters.SocialAccountAdapter"
SOCIALACCOUNT_LOGIN_ON_GET = True  # GET /api/auth/auth/{provider} goes straight to the provider
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # never attach a provider login to a local user by e-mail
SOCIALACCOUNT_STORE_TOKENS = False
# Cross-app access (servers and agents in the `cross_app_access` mode): each OpenID Connect login's ID
# token and refresh token are kept, sealed (accounts/models.ProviderSignIn), and exchanged at the identity
# provider for an assertion (ID-JAG) the target's authorization server takes (connections/cross_app.py).
CROSS_APP_ACCESS_ENABLED = env.bool("CROSS_APP_ACCESS_ENABLED", default=False)
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "email"]
ACCOUNT_ADAPTER = "accounts.adapters.AccountAdapter"
