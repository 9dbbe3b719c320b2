"""The cluster's long-running processes: each in its own session, its pid in STATE/pids/<name>, its
output in STATE/logs/<name>.log, and in the cluster's cgroups before it executes anything (so
whatever it forks is found by down, however it is reparented)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.support.launcher import cgroups


def start(argv: Sequence[str | Path], pid_file: Path, log_file: Path | None, cgroup: str,
          cgroup_root: Path = cgroups.ROOT) -> int:
    """Starts ``argv`` detached (no terminal, stdin from /dev/null, a session of its own) and
    returns its pid. ``log_file`` is appended to (None: the output is dropped)."""
    def join() -> None:  # in the child, before exec
        cgroups.join(cgroup, os.getpid(), cgroup_root)

    with open(log_file, "ab") if log_file is not None else open(os.devnull, "wb") as out:
        process = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=join)
    pid_file.write_text(f"{process.pid}\n")
    return process.pid


def stopped(pid: int) -> bool:
    """True when the process is gone, or a zombie nobody reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def recorded(pids: Path) -> dict[str, int]:
    """The pid files' daemons (a file that is not a pid is left out)."""
    found = {}
    for path in sorted(pids.iterdir()) if pids.is_dir() else []:
        try:
            found[path.name] = int(path.read_text().strip())
        except (OSError, ValueError):
            continue
    return found


def terminate(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
