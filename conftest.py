"""How pytest-xdist shares the suite out (`--dist=loadgroup`, scripts/test's KAOS_TEST_WORKERS).

Each test file is one unit of work, so a module's fixtures start once. The folders whose
session fixtures start something heavy (a control plane, Argo CD, `kaos up`, llama.cpp) are one
unit each: split over workers, each worker would start its own. The units are given out largest
first (by number of tests, xdist's default).

This is a scheduler of its own rather than `xdist_group` marks: xdist 3.8 adds a mark's group to
`item._nodeid`, which pytest 9 no longer reads, so the marks group nothing.
"""

from __future__ import annotations

import pytest

ONE_UNIT = ("tests/cluster/", "tests/gitops/", "tests/realmodel/", "e2e/")


def work_unit(nodeid: str) -> str:
    """The unit of work of a test: its folder for ONE_UNIT, else its file."""
    path = nodeid.split("::", 1)[0]
    return next((folder for folder in ONE_UNIT if path.startswith(folder)), path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ByWorkUnit(config, log)
