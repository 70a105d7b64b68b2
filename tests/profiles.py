"""Hypothesis profiles shared by every test file: ``ci`` (the default) and ``dev`` (thorough).

Select one with ``HYPOTHESIS_PROFILE=dev python -m pytest``. A test that names its own example count scales it
with :func:`examples`, so the ``ci`` profile runs exactly the written count and ``dev`` ten times as many.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

MULTIPLIERS = {"ci": 1, "dev": 10}

settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def examples(count: int) -> int:
    """The number of examples a test that asks for ``count`` runs under the active profile."""
    return count * MULTIPLIERS.get(PROFILE, 1)
