"""Installed sizes of the distributions (prints them; not a test).

    nice python benchmarks/package_sizes.py [--before d769c49] [--extras]

For each distribution, a fresh venv, ``pip install`` of it (from pip's cache where it can), and
the size of its site-packages (du, pip itself left out): this commit's two distributions,
kaos-runtime (runtime/) and kaos (operator/), and the single distribution of the commit
``--before`` (the repository root's pyproject.toml then), checked out with ``git worktree
add``. With --extras the runtime is measured with its llamacpp extra, the old one with [llm]
(llama-cpp-python: a wheel from pip's cache, or a build of some minutes). Then the images'
sizes (``docker image inspect``) when docker has the KAOS images; skipped otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ("ghcr.io/kaos-tools/kaos-runtime", "ghcr.io/kaos-tools/kaos-operator")


def folder_bytes(folder: Path, leave_out: tuple[str, ...] = ()) -> int:
    total = 0
    for dirpath, _dirnames, filenames in os.walk(folder):
        if Path(dirpath).relative_to(folder).parts[:1] and Path(dirpath).relative_to(folder).parts[0].startswith(leave_out):
            continue
        total += sum(os.lstat(os.path.join(dirpath, name)).st_size for name in filenames)
    return total


def installed_size(requirement: str, scratch: Path) -> tuple[int, int]:
    """(bytes of site-packages without pip, number of distributions) after ``pip install requirement`` in a fresh venv."""
    venv = Path(tempfile.mkdtemp(dir=scratch))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement], check=True)
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    count = sum(1 for entry in site.iterdir() if entry.name.endswith(".dist-info") and not entry.name.startswith("pip-"))
    size = folder_bytes(site, leave_out=("pip", "_distutils_hack", "setuptools", "pkg_resources"))
    shutil.rmtree(venv)
    return size, count


def image_size(repository: str) -> int | None:
    """Bytes of the newest local image of ``repository``, or None (no docker, or no such image)."""
    if shutil.which("docker") is None:
        return None
    listed = subprocess.run(["docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", repository],
                            capture_output=True, text=True)
    references = listed.stdout.split()
    if listed.returncode != 0 or not references:
        return None
    inspected = subprocess.run(["docker", "image", "inspect", "--format", "{{.Size}}", references[0]],
                               capture_output=True, text=True)
    return int(inspected.stdout.strip()) if inspected.returncode == 0 else None


def megabytes(size: int) -> str:
    return f"{size / 1e6:7.1f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="d769c49", help="the commit of the single distribution")
    parser.add_argument("--extras", action="store_true", help="with llama.cpp's server (runtime[llamacpp], old [llm])")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kaos-sizes-") as scratch_name:
        scratch = Path(scratch_name)
        before = scratch / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(before), args.before],
                       check=True)
        try:
            rows = [
                (f"kaos (single distribution, {args.before})", f"{before}[llm]" if args.extras else str(before)),
                ("kaos-runtime (runtime/)", f"{ROOT / 'runtime'}[llamacpp]" if args.extras else str(ROOT / "runtime")),
                ("kaos (operator/)", str(ROOT / "operator")),
            ]
            print(f"installed size of each distribution with its requirements (site-packages without pip; "
                  f"python {sysconfig.get_python_version()}):")
            for label, requirement in rows:
                size, count = installed_size(requirement, scratch)
                print(f"  {label:45} {megabytes(size)}  ({count} distributions)", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
    sizes = {repository: image_size(repository) for repository in IMAGES}
    if all(size is None for size in sizes.values()):
        print("images: none built here (docker build -f docker/runtime.Dockerfile ...; skipped)")
    for repository, size in sizes.items():
        if size is not None:
            print(f"  image {repository:40} {megabytes(size)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
