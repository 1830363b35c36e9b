"""Embeddings for semantic search: the packaged all-MiniLM-L6-v2 model in-process (default), or an
OpenAI-compatible `/embeddings` endpoint. Either way vectors have 384 dimensions, the size of the
`embedding` columns."""

from registry_site.settings.env import ConfigurationError, env

EMBEDDINGS_PROVIDERS = ("local", "openai")
EMBEDDINGS_LOCAL_MODEL = "all-MiniLM-L6-v2"  # the one model the local provider ships with

EMBEDDINGS_PROVIDER = env.str("EMBEDDINGS_PROVIDER", default="local").strip().lower()
# How the local model runs: ONNX Runtime on a graph exported once from the packaged weights (the same
# vectors, several times faster, no torch in the web processes), or sentence-transformers on torch.
EMBEDDINGS_BACKENDS = ("onnx", "torch")
EMBEDDINGS_BACKEND = env.str("EMBEDDINGS_BACKEND", default="onnx").strip().lower()
EMBEDDINGS_API_URL = env.str("EMBEDDINGS_API_URL", default="").strip().rstrip("/")
EMBEDDINGS_MODEL = env.str("EMBEDDINGS_MODEL", default=EMBEDDINGS_LOCAL_MODEL).strip()
EMBEDDINGS_API_KEY = env.str("EMBEDDINGS_API_KEY", default="")
# One request to the embeddings endpoint; a search waits this long at most before answering 500.
EMBEDDINGS_TIMEOUT_SECONDS = 10.0
# Writes embed their own row before answering when the local model is loaded in the process (so the
# next request finds it by meaning); off, every embedding goes through the worker.
EMBEDDINGS_IN_REQUEST = env.bool("EMBEDDINGS_IN_REQUEST", default=True)

if EMBEDDINGS_PROVIDER not in EMBEDDINGS_PROVIDERS:
    raise ConfigurationError(
        f"EMBEDDINGS_PROVIDER={EMBEDDINGS_PROVIDER!r} is unknown: use {' or '.join(EMBEDDINGS_PROVIDERS)}"
    )
if EMBEDDINGS_BACKEND not in EMBEDDINGS_BACKENDS:
    raise ConfigurationError(
        f"EMBEDDINGS_BACKEND={EMBEDDINGS_BACKEND!r} is unknown: use {' or '.join(EMBEDDINGS_BACKENDS)}"
    )
if EMBEDDINGS_PROVIDER == "openai" and not EMBEDDINGS_API_URL:
    raise ConfigurationError(
        "EMBEDDINGS_API_URL is not set: EMBEDDINGS_PROVIDER=openai needs the endpoint's base URL "
        "(for example https://api.openai.com/v1; the registry posts to <url>/embeddings)"
    )
if EMBEDDINGS_API_URL and not EMBEDDINGS_API_URL.startswith(("http://", "https://")):
    raise ConfigurationError(f"EMBEDDINGS_API_URL={EMBEDDINGS_API_URL!r} is not an http(s) URL")
if EMBEDDINGS_PROVIDER == "local" and EMBEDDINGS_MODEL.rsplit("/", 1)[-1] != EMBEDDINGS_LOCAL_MODEL:
    raise ConfigurationError(
        f"EMBEDDINGS_MODEL={EMBEDDINGS_MODEL!r} needs EMBEDDINGS_PROVIDER=openai: the local provider "
        f"only has the packaged {EMBEDDINGS_LOCAL_MODEL}"
    )

# Each semantic search runs the model: searches per minute for one user (or one address, anonymous).
SEMANTIC_SEARCH_RATE_PER_MINUTE = env.int("SEMANTIC_SEARCH_RATE_PER_MINUTE", default=120)
# The console's search lists no match below this cosine similarity (docs/search.md); the APIs return every
# ranked match with its score and leave the cut to the caller.
SEARCH_PAGE_MIN_SCORE = env.float("SEARCH_PAGE_MIN_SCORE", default=0.3)
