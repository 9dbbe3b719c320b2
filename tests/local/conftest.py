"""Fixtures of the local control plane's tests."""

import pytest

from tests.local.stand_in import running_plane


@pytest.fixture
async def control(tmp_path):
    """A started control plane whose every workload is the stand-in program (tests/local/stand_in.py)."""
    async with running_plane(tmp_path) as plane:
        yield plane
