"""Counting tokens: tiktoken for the models it knows (OpenAI's), a documented estimate otherwise.

tiktoken's BPE files are never downloaded: the ones litellm ships in its package
(``litellm_core_utils/tokenizers``: cl100k_base, o200k_base) are used through
``TIKTOKEN_CACHE_DIR`` (a value already set wins), and a model whose encoding has no file there
is counted with the estimate. Loading an encoding costs RSS (measured: +44 MiB for cl100k_base,
+70 MiB for o200k_base), so it happens on first use, in a worker thread, and
``MODEL_TOKENIZER=estimate`` avoids it.

The estimate: one token per 3 characters, rounded up (English averages about 4 characters a
token in OpenAI's encodings, so it errs on the side of fitting). Every message costs 4 tokens
on top of its text, and a request 3 (OpenAI's accounting of roles and the reply's start).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os

from ..clients.function_calling import litellm_file

log = logging.getLogger("kaos_runtime.context")

PER_MESSAGE = 4
PER_REQUEST = 3
CHARS_PER_TOKEN = 3
# Counts kept per text (a session's messages are counted again at every step and turn), and cuts.
CACHE_SIZE = 8192
HEADS_CACHE_SIZE = 256
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


class Tokens:
    """Counts tokens of text and cuts text to a number of tokens (the estimate)."""

    name = "estimate"

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._heads: dict[tuple[str, int], str] = {}

    def count(self, text: str) -> int:
        found = self._counts.get(text)
        if found is None:
            if len(self._counts) >= CACHE_SIZE:
                self._counts.clear()
            found = self._counts[text] = self._count(text)
        return found

    def _count(self, text: str) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def head(self, text: str, tokens: int) -> str:
        """The start of ``text`` that is at most ``tokens`` tokens (a result is cut again at
        every step of its run)."""
        found = self._heads.get((text, tokens))
        if found is None:
            if len(self._heads) >= HEADS_CACHE_SIZE:
                self._heads.clear()
            found = self._heads[(text, tokens)] = self._head(text, max(0, tokens))
        return found

    def _head(self, text: str, tokens: int) -> str:
        return text[:tokens * CHARS_PER_TOKEN]

    def message(self, message: dict) -> int:
        """What one chat message costs: its text, its tool calls, and the per-message overhead."""
        content = message.get("content")
        cost = PER_MESSAGE + (self.count(content) if isinstance(content, str) else 0)
        calls = message.get("tool_calls")
        if calls:
            cost += self.count(json.dumps(calls, separators=(",", ":")))
        return cost


class TiktokenTokens(Tokens):
    def __init__(self, encoding) -> None:
        super().__init__()
        self.encoding = encoding
        self.name = f"tiktoken:{encoding.name}"

    def _count(self, text: str) -> int:
        return len(self.encoding.encode(text, disallowed_special=()))

    def _head(self, text: str, tokens: int) -> str:
        ids = self.encoding.encode(text, disallowed_special=())
        return self.encoding.decode(ids[:tokens])


class ServerTokens(Tokens):
    """Counts the model server gave (its own tokenizer: clients/server_tokens.py), learned before
    each fit for the texts it has not counted yet (``missing``, ``learn``). A text it has not
    counted (a cut the builder makes) is estimated; a cut keeps the share of characters the
    share of tokens asks for."""

    name = "llama.cpp"

    def count(self, text: str) -> int:
        found = self._counts.get(text)
        return found if found is not None else self._count(text)

    def missing(self, texts: list[str]) -> list[str]:
        return [text for text in dict.fromkeys(texts) if text not in self._counts]

    def learn(self, text: str, count: int) -> None:
        if len(self._counts) >= CACHE_SIZE:
            self._counts.clear()
        self._counts[text] = count

    def _head(self, text: str, tokens: int) -> str:
        return text[:len(text) * tokens // max(1, self.count(text))]


def bundled_encodings_dir() -> str | None:
    """litellm's folder of tiktoken files."""
    return litellm_file("litellm_core_utils", "tokenizers")


def encoding_file(cache_dir: str, encoding: str) -> str:
    """Where tiktoken looks for an encoding's file in its cache (the SHA-1 of its URL)."""
    return os.path.join(cache_dir, hashlib.sha1(ENCODING_URL.format(name=encoding).encode()).hexdigest())


def tokens_for(model_name: str, mode: str = "auto") -> Tokens:
    """The counter for a model (blocking: may load an encoding; call it in a worker thread)."""
    if mode == "estimate":
        return Tokens()
    try:
        import tiktoken
    except ImportError:
        return Tokens()
    bare = model_name.rsplit("/", 1)[-1]
    try:
        encoding = tiktoken.encoding_name_for_model(bare)
    except KeyError:
        return Tokens()
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or bundled_encodings_dir()
    if not cache_dir or not os.path.exists(encoding_file(cache_dir, encoding)):
        log.warning("no local file of tiktoken's %s (for %s): tokens are estimated", encoding, model_name)
        return Tokens()
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", cache_dir)
    return TiktokenTokens(tiktoken.get_encoding(encoding))
