"""Long-term memory: what an agent remembers of its callers across sessions, in a vector store
(docs/memory.md, "Long-term memory"; configured by ``LONG_TERM_MEMORY_*``, which a MemoryStore
resource sets).

- ``records``: what a memory is, whose it is (the scope), the table a collection gets (pure);
- ``store``: the vector store's interface (``create_store`` here picks the backend); ``pg_store`` (PostgreSQL + pgvector) and
  ``sqlite_store`` (SQLite + sqlite-vec, embedded) its backends;
- ``embedder``: the client of a ModelAPI's ``/v1/embeddings``; ``extraction``: the durable facts
  of a turn;
- ``service``: ``LongTermMemory``, recall and learning that never fail a turn, and its status;
- ``turn``: the wrapper around the agentic loop and the ``remember``/``recall`` tools.
"""

from __future__ import annotations

from ..core.settings import AgentSettings
from .embedder import Embedder
from .extraction import Extractor
from .service import LongTermMemory, LongTermUnavailable
from .store import VectorStore
from .turn import MemoryTools, RememberingAgent


def create_store(url: str, collection: str, timeout: float) -> VectorStore:
    """The backend the URL's scheme names (each imported only when asked for)."""
    if url.startswith("sqlite:///"):
        from .sqlite_store import SqliteVecStore

        return SqliteVecStore(url.removeprefix("sqlite://"), collection, timeout)
    from .pg_store import PgVectorStore

    return PgVectorStore(url, collection, timeout)


def create_long_term(config: AgentSettings) -> LongTermMemory | None:
    """The agent's long-term memory, or None when ``LONG_TERM_MEMORY_ENABLED`` is off. Facts are
    extracted by the extraction model (default: the agent's own), by rules when the agent's
    replies are scripted (DEBUG_MOCK_RESPONSES) or no model is configured."""
    settings = config.long_term
    if not settings.enabled:
        return None
    url = settings.store_url.get_secret_value().strip()
    api_key = config.api_key.get_secret_value()
    scripted = config.mock_responses is not None
    extraction_url = "" if scripted else (settings.extraction_url or config.model_api_url)
    extraction_model = settings.extraction_model or config.model_name
    return LongTermMemory(
        create_store(url, settings.collection, settings.timeout),
        Embedder(settings.embedding_url, settings.embedding_model, api_key, settings.timeout),
        Extractor(extraction_url, extraction_model, api_key, settings.timeout),
        scope=settings.scope, agent=config.name, top_k=settings.top_k, retention_days=settings.retention_days,
        store_url=url)


__all__ = ["LongTermMemory", "LongTermUnavailable", "MemoryTools", "RememberingAgent", "create_long_term", "create_store"]
