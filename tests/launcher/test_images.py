"""Images of the cluster's own parts (tests/support/launcher/images.py): the tag from the part's
cache folder, and an image holding the binary alone, pushed to a registry of crane's."""

import io
import shutil
import subprocess
import tarfile

import pytest

from kaos.local.ports import free_port
from tests.support.launcher.images import binary_image, version_tag
from tests.support.launcher.layout import Layout
from tests.support.launcher.steps import succeeds
from tests.support.launcher.versions import pins
from tests.support.polling import wait_until
from tests.support.processes import stop_process

CRANE = Layout.from_env().cache / f"crane-{pins()['crane'].version}" / "crane"


def test_the_tag_is_the_version_of_the_folder_the_part_links_into(tmp_path):
    built = tmp_path / "cache" / "coredns-v1.14.7-bc62a054"
    built.mkdir(parents=True)
    (built / "coredns").write_text("")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "coredns").symlink_to(built / "coredns")
    assert version_tag(tmp_path / "bin", "coredns") == "v1.14.7-bc62a054"


@pytest.mark.skipif(not CRANE.exists() or not shutil.which("tar"), reason="needs crane (scripts/setup-cluster)")
def test_the_image_holds_the_binary_alone_owned_by_root_as_its_entrypoint(tmp_path):
    port = free_port()
    registry = subprocess.Popen([CRANE, "registry", "serve", "--address", f"127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: succeeds([CRANE, "catalog", f"127.0.0.1:{port}"]), timeout=30, what="crane's registry")
        program = tmp_path / "pause"
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
        ref = binary_image(CRANE, f"127.0.0.1:{port}", "pause", "v1", [program])
        assert ref == f"127.0.0.1:{port}/kaos-cluster/pause:v1"
        config = subprocess.run([CRANE, "config", ref], capture_output=True, text=True, check=True).stdout
        assert '"Entrypoint":["/pause"]' in config and '"Env":["PATH=/"]' in config and '"amd64"' in config
        exported = subprocess.run([CRANE, "export", ref, "-"], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(exported)) as layer:
            members = layer.getmembers()
        assert [(m.name, m.uid, m.gid, m.mtime, m.mode & 0o777) for m in members] == [("pause", 0, 0, 0, 0o755)]
    finally:
        stop_process(registry, grace=5)

