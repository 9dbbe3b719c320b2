"""Which durable facts a turn holds: by rules (deterministic: under DEBUG_MOCK_RESPONSES, and
when no model is at hand) or by asking a model, falling back to the rules.

The rules keep the user's own statements about themselves and their standing wishes ("my ... is",
"I live/work/like/prefer ...", "call me ...", "remember that ..."), never questions, each
sentence once. A model is asked for a JSON list of short facts.
"""

from __future__ import annotations

import json
import logging
import re

import httpx

from .records import clip

log = logging.getLogger("kaos_runtime.long_term")

MAX_FACTS = 8  # from one turn
_SENTENCES = re.compile(r"(?<=[.!?\n])\s+")
_REMEMBER = re.compile(r"^\s*(please\s+)?(remember|note|keep in mind)\s*(that|:)?\s*", re.I)
_DURABLE = re.compile(
    r"\b(my\s+\w+|i\s+am|i'm|i\s+live|i\s+work|i\s+like|i\s+love|i\s+prefer|i\s+hate|i\s+dislike|i\s+have|"
    r"i\s+own|i\s+was\s+born|i\s+speak|i\s+use|i\s+always|i\s+never|i\s+moved|i\s+study|i'm\s+allergic|"
    r"call\s+me)\b", re.I)
EXTRACTION_PROMPT = (
    "You extract durable facts about the user from one turn of a conversation: who they are, what "
    "they like, own, use, plan or ask to be remembered. Only facts that will still be true in "
    "later conversations; no questions, no facts about the assistant. Reply with a JSON list of "
    "short sentences in the first person of the user (e.g. [\"My favourite colour is teal.\"]), "
    "or [] when there is none.")


def facts_by_rules(user_text: str) -> list[str]:
    """The durable facts among the user's sentences (pure, deterministic)."""
    found: list[str] = []
    for sentence in _SENTENCES.split(user_text.strip()):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        asked = _REMEMBER.match(sentence)
        if asked:
            sentence = sentence[asked.end():].strip()
            sentence = sentence[:1].upper() + sentence[1:]
        elif not _DURABLE.search(sentence):
            continue
        sentence = clip(sentence)
        if len(sentence) >= 6 and sentence not in found:
            found.append(sentence)
    return found[:MAX_FACTS]


def parse_fact_list(reply: str) -> list[str] | None:
    """A model's JSON list of facts (inside a fenced block or not); None when it is not one."""
    text = reply.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    facts = []
    for item in value:
        item = clip(item)
        if item and item not in facts:
            facts.append(item)
    return facts[:MAX_FACTS]


def chat_url(base: str) -> str:
    base = base.rstrip("/")
    return base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")


class Extractor:
    """Facts of a turn. Without a model (``url`` empty), or scripted: the rules."""

    def __init__(self, url: str, model: str, api_key: str, timeout: float) -> None:
        self.url, self.model, self.api_key, self.timeout = url, model, api_key, timeout
        self._client: httpx.AsyncClient | None = None  # one per agent, opened at the first turn

    async def facts(self, user_text: str, answer: str) -> list[str]:
        if not self.url or not self.model:
            return facts_by_rules(user_text)
        body = {"model": self.model, "temperature": 0,
                "messages": [{"role": "system", "content": EXTRACTION_PROMPT},
                             {"role": "user", "content": f"User: {user_text}\nAssistant: {answer}"}]}
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout)
        try:
            response = await self._client.post(chat_url(self.url), json=body,
                                               headers={"Authorization": f"Bearer {self.api_key}"})
            response.raise_for_status()
            reply = response.json()["choices"][0]["message"]["content"] or ""
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as error:
            log.info("fact extraction by %s failed (%s); using the rules", self.model, error)
            return facts_by_rules(user_text)
        parsed = parse_fact_list(reply)
        return facts_by_rules(user_text) if parsed is None else parsed

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
