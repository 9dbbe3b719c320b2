"""The model mirror over HTTP: is a model there (the operator, before it deploys a Hosted
ModelAPI), and publishing one (``kaos models push``), through the OCI distribution API.

What is published is what Ollama's own registry serves and what ``ollama pull`` reads: a Docker
v2 manifest (``application/vnd.docker.distribution.manifest.v2+json``), a config blob, and layers
with Ollama's media types (the GGUF as ``application/vnd.ollama.image.model``, the chat template,
the parameters). Ollama itself builds them (``ollama create`` from the GGUF, in a throwaway
server), so the template it detects is the one it would use; this module uploads them (blob
uploads and a manifest PUT, with Basic or Bearer-token credentials when given).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx

from kaos.model_mirror import Registry, split_model

MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
CHUNK = 1 << 20


class PushError(RuntimeError):
    """Publishing failed; the message says where and why."""


def base_url(registry: Registry, insecure: bool) -> str:
    return f"{'http' if insecure else 'https'}://{registry.host}"


async def manifest_problem(registry: Registry, model: str, insecure: bool, *, refused_ok: bool = False,
                           timeout: float = 10.0) -> str | None:
    """None when the mirror serves the model's manifest to an anonymous reader (or, with
    ``refused_ok``, asks for the credentials the reader has); otherwise what went wrong, naming
    the URL tried."""
    url = base_url(registry, insecure) + registry.manifest_path(model)
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.get(url, headers={"Accept": MANIFEST_TYPE})
    except httpx.HTTPError as error:
        return f"GET {url} failed: {type(error).__name__}: {error}"
    if response.status_code == 200:
        return None
    if response.status_code in (401, 403):
        if refused_ok:
            return None
        return (f"GET {url} answered {response.status_code}: the mirror wants credentials; give them with the "
                "platform's hosted.credentialsSecret")
    return f"GET {url} answered {response.status_code}"


# ---------- publishing ----------

@dataclass(frozen=True)
class Blob:
    digest: str
    size: int
    media_type: str
    path: Path


def gguf_source(source: str) -> Path:
    """``--from``: a .gguf file, or an installed Python distribution holding exactly one."""
    path = Path(source).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise PushError(f"no file {path}")
        return path
    from importlib import metadata

    name = re.split(r"[=<>!~\[; ]", source, maxsplit=1)[0]
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise PushError(f"{source!r} is neither a .gguf file nor an installed package (pip install {source})") from None
    files = [file for file in distribution.files or () if str(file).endswith(".gguf")]
    if len(files) != 1:
        raise PushError(f"package {name} holds {len(files)} .gguf files; name the file itself with --from")
    return Path(distribution.locate_file(files[0]))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ollama_model(gguf: Path, model: str, ollama: str, work: Path) -> tuple[dict, list[Blob]]:
    """The model as Ollama builds it from the GGUF: its manifest and its blobs (config first)."""
    port = _free_port()
    env = {**os.environ, "OLLAMA_HOST": f"127.0.0.1:{port}", "OLLAMA_MODELS": str(work / "models"),
           "HOME": str(work)}
    server = subprocess.Popen([ollama, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise PushError(f"{ollama} serve did not start") from None
                time.sleep(0.2)
        (work / "Modelfile").write_text(f"FROM {gguf}\n")
        created = subprocess.run([ollama, "create", model, "-f", str(work / "Modelfile")], env=env,
                                 capture_output=True, text=True)
        if created.returncode != 0:
            raise PushError(f"ollama create failed: {created.stderr.strip()[-500:]}")
    finally:
        server.terminate()
        server.wait(timeout=10)
    name, tag = split_model(model)
    manifest = json.loads((work / "models" / "manifests" / "registry.ollama.ai" / "library" / name / tag).read_text())
    blobs = []
    for entry in [manifest["config"], *manifest["layers"]]:
        entry.pop("from", None)  # a local path of Ollama's, not part of the registry's manifest
        path = work / "models" / "blobs" / entry["digest"].replace(":", "-")
        blobs.append(Blob(entry["digest"], entry["size"], entry["mediaType"], path))
    return manifest, blobs


def find_ollama(given: str | None) -> str:
    for candidate in (given, shutil.which("ollama")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise PushError("building the model needs the ollama program: put it on PATH or name it with --ollama")


class _Uploader:
    """The distribution API's upload calls for one repository, with credentials when given."""

    def __init__(self, registry: Registry, model: str, insecure: bool, auth: tuple[str, str] | None):
        self.registry, self.model = registry, model
        self.base = base_url(registry, insecure)
        self.auth = auth
        self.client = httpx.Client(timeout=120, follow_redirects=False)
        self.token: str | None = None

    def _request(self, method: str, url: str, **kwargs) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        for attempt in range(2):
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            response = self.client.request(method, url, headers=headers,
                                           auth=self.auth if not self.token and self.auth else None, **kwargs)
            if response.status_code != 401 or attempt:
                return response
            challenge = response.headers.get("www-authenticate", "")
            if not challenge.lower().startswith("bearer"):
                return response
            self.token = self._token(challenge)
            if "content" in kwargs and not isinstance(kwargs["content"], bytes):
                return response  # a streamed body cannot be sent twice; HEAD first got the token
        return response

    def _token(self, challenge: str) -> str:
        fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        if "realm" not in fields:
            raise PushError(f"the registry's challenge names no realm: {challenge}")
        params = {key: fields[key] for key in ("service", "scope") if key in fields}
        response = self.client.get(fields["realm"], params=params, auth=self.auth)
        if response.status_code != 200:
            raise PushError(f"the registry's token service {fields['realm']} answered {response.status_code}")
        body = response.json()
        return body.get("token") or body.get("access_token") or ""

    def _check(self, response: httpx.Response, what: str, *expected: int) -> httpx.Response:
        if response.status_code not in expected:
            raise PushError(f"{what}: {response.request.method} {response.request.url} answered "
                            f"{response.status_code} {response.text[:300]}")
        return response

    def blob(self, blob: Blob) -> bool:
        """Upload one blob unless the registry has it; True when it was uploaded."""
        url = self.base + self.registry.blob_path(self.model, blob.digest)
        if self._request("HEAD", url).status_code == 200:
            return False
        started = self._check(self._request("POST", self.base + self.registry.blob_path(self.model, "uploads/")),
                              "starting an upload", 202)
        location = str(httpx.URL(self.base).join(started.headers["location"]))
        location += ("&" if "?" in location else "?") + f"digest={blob.digest}"
        self._check(self._request("PUT", location, content=_chunks(blob.path),
                                  headers={"Content-Type": "application/octet-stream",
                                           "Content-Length": str(blob.size)}),
                    f"uploading {blob.media_type}", 201)
        return True

    def manifest(self, manifest: dict) -> None:
        url = self.base + self.registry.manifest_path(self.model)
        self._check(self._request("PUT", url, content=json.dumps(manifest).encode(),
                                  headers={"Content-Type": MANIFEST_TYPE}), "writing the manifest", 201)


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as file:
        while chunk := file.read(CHUNK):
            yield chunk


def push(model: str, source: str, registry: Registry, *, insecure: bool, auth: tuple[str, str] | None = None,
         ollama: str | None = None, say=print) -> str:
    """Publish the GGUF of ``source`` as the Ollama model ``model`` in the mirror; returns the
    full name the cluster pulls."""
    split_model(model)  # ValueError for a name the mirror cannot hold
    gguf = gguf_source(source)
    program = find_ollama(ollama)
    with tempfile.TemporaryDirectory(prefix="kaos-models-push-") as work:
        manifest, blobs = ollama_model(gguf, model, program, Path(work))
        uploader = _Uploader(registry, model, insecure, auth)
        try:
            for blob in blobs:
                uploaded = uploader.blob(blob)
                say(f"{'uploaded' if uploaded else 'already there'}: {blob.media_type} {blob.digest[:19]} "
                    f"({blob.size} bytes)")
            uploader.manifest(manifest)
        except httpx.HTTPError as error:
            raise PushError(f"{base_url(registry, insecure)}: {type(error).__name__}: {error}") from None
        finally:
            uploader.client.close()
    return registry.reference(model)
