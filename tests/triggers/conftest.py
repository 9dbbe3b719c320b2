"""The runtime tests' fixtures (a mock model server, agents as real processes) for the runner's tests."""

from tests.runtime.conftest import log_dir, mock_model, start  # noqa: F401  (fixtures)
