import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import profiles  # noqa: F401  (registers and loads the Hypothesis profile)
import xla_oracle


@pytest.fixture(scope="session")
def xla():
    """XLA's own parser/printer in a worker process; tests using it are skipped without jaxlib."""
    if not xla_oracle.available():
        pytest.skip("jax/jaxlib not installed (pip install -e .[test,jax])")
    return xla_oracle.oracle()
