from django.apps import AppConfig


class SearchConfig(AppConfig):
    """Semantic search across the registry (servers, tools, agents, catalog entries): the text each row is
    found by, its embedding, and the search itself, for the APIs and the /search page."""

    name = "search"

    def ready(self) -> None:
        # The embedding tasks run in the web process too, right after a write commits
        # (core.embeddings.embed_after_commit finds them by name in Celery's registry).
        from search import tasks  # noqa: F401
