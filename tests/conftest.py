import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import background
import profiles  # noqa: F401  (registers and loads the Hypothesis profile)
import xla_oracle


@pytest.fixture(scope="session")
def xla():
    """XLA's own parser/printer in a worker process; tests using it are skipped without jaxlib."""
    if not xla_oracle.available():
        pytest.skip("jax/jaxlib not installed (pip install -e .[test,jax])")
    return xla_oracle.oracle()


@pytest.fixture(autouse=True)
def kernels_compiled(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each compiled-kernel test: no kernel failed to compile (a failure switches this process to the NumPy
    path, which gives the same bytes, so the tests' own checks would not see it)."""
    yield
    if request.node.nodeid.partition("::")[0] in background.KERNEL_TESTS:
        from xlashapes.physical import _aot

        assert not _aot.numba_failed(), "a kernel failed to compile: this process went over to the NumPy path"


@pytest.fixture(autouse=True)
def untimed_plans(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test takes the rules' plans (no plan chosen by timing, :mod:`xlashapes.physical._tuned`), so that what
    a test counts of the kernels does not depend on the machine's timings; the tests of the timed choices turn it
    back on."""
    from xlashapes.physical import _tuned

    monkeypatch.setattr(_tuned, "TUNE_BYTES", 1 << 62)
    _tuned.forget()
    yield
    _tuned.forget()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the compiled-kernel tests last (in ``background.KERNEL_TESTS`` order), so that the background warm-up
    has compiled their kernels by the time they start."""
    rank = {name: i + 1 for i, name in enumerate(background.KERNEL_TESTS)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], 0))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the background jobs the selected tests will want: mypy for test_lint, the kernel cache warm-up; then
    move everything imported so far out of the collector's sight (``gc.freeze``): the full collections the tests'
    garbage triggers then walk only what the tests made, not every module object of numpy, hypothesis and jax."""
    files = {item.nodeid.partition("::")[0] for item in session.items}
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # (None: one process; under pytest-xdist every worker gets here)
    if "tests/test_lint.py" in files and worker is None:  # (workers: test_lint runs mypy itself, the other one goes on)
        background.start("mypy", background.JOBS["mypy"])
    if (files & set(background.KERNEL_TESTS) and background.numba_wanted() and worker in (None, "gw0")
            and len(files) > len(background.KERNEL_TESTS)):
        background.start("kernels", background.JOBS["kernels"], background.warm_up_env())
    gc.collect()
    gc.freeze()


def pytest_sessionfinish(session: pytest.Session) -> None:
    background.stop_all()
