"""A local OCI registry for a test: go-containerregistry's ``crane registry serve`` (built by
scripts/setup-gitops) on a free loopback port, blobs in a temp folder, stopped at the end
(``with Registry(folder) as registry``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from kaos.local.ports import free_port
from tests.gitops.tools import tool
from tests.support.processes import stop_process, wait_serving


class Registry:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def charts(self) -> str:
        """Where the packaging script pushes the charts: oci://<host>/charts."""
        return f"oci://{self.host}/charts"

    def start(self) -> "Registry":
        (self.folder / "blobs").mkdir(parents=True, exist_ok=True)
        with open(self.folder / "registry.log", "ab") as log:
            self.process = subprocess.Popen(
                [str(tool("crane")), "registry", "serve", "--address", self.host, "--disk", str(self.folder / "blobs")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_serving(self.process, lambda: httpx.get(f"http://{self.host}/v2/", timeout=1).status_code == 200, 30,
                     f"crane registry serve on {self.host}",
                     lambda: (self.folder / "registry.log").read_text(errors="replace"), interval=0.1)
        return self

    def tags(self, repository: str) -> list[str]:
        answer = httpx.get(f"http://{self.host}/v2/{repository}/tags/list", timeout=5)
        return answer.json().get("tags") or [] if answer.status_code == 200 else []

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def __enter__(self) -> "Registry":
        return self.start()

    def __exit__(self, *_) -> None:
        self.stop()
