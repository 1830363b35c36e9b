"""The shared library below every app: errors, rate limits, epochs, the input rule, Redis clients,
validators, the embedding provider, OpenAPI helpers, and the helpers of services and the admin. It
imports no app and nothing of registry_site (the contract in .importlinter)."""
