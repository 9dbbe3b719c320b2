"""Run a program in a child whose address space is capped, and report its peak resident memory
(the rusage os.wait4 gives for that child alone): for tests that show an input does not make a
process grow, without letting a process that does grow take the machine down."""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import threading
from dataclasses import dataclass

ADDRESS_SPACE = 1024 ** 3  # 1 GiB: far above what the kaos CLI needs, far below a billion laughs


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    max_rss: int  # bytes
    killed_at_timeout: bool


def run_capped(argv: list[str], env: dict[str, str], timeout: float = 120.0,
               address_space: int = ADDRESS_SPACE) -> Finished:
    """``argv`` run to its end (killed after ``timeout`` seconds), with RLIMIT_AS = ``address_space``."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=cap)
        fired = threading.Event()

        def kill() -> None:
            fired.set()
            process.kill()

        watchdog = threading.Timer(timeout, kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            watchdog.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return Finished(process.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                        usage.ru_maxrss * 1024, fired.is_set())
