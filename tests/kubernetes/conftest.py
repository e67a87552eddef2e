"""The chart's tests' fixtures: helm and Kubernetes' schemas.

Where helm or kubernetes-validate is missing the tests that need it skip with the reason
(and fail under LOADGEN_REQUIRE_BROKERS=1). ``podman`` and ``image`` are the session's
(:mod:`harness.podman_image`, registered in tests/conftest.py): the image tests' build serves
these too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.kubernetes.chart import HELM_INSTALL, Helm, find_helm

from loadgen.pytest_plugin.require import unavailable

KUBERNETES_VERSIONS = ("1.25", "1.37")
"""Kubernetes' own OpenAPI schemas, as kubernetes-validate ships them: the oldest and the newest
of its versions. Strict: a field the schema does not know fails."""


@pytest.fixture(scope="session")
def helm() -> Helm:
    path = find_helm()
    if path is None:
        unavailable(f"helm is not installed ({HELM_INSTALL})")
    return Helm(path)


@pytest.fixture(scope="session")
def validate() -> Callable[[dict[str, Any]], None]:
    """``validate(obj)``: checks one object against every version's schema, strictly."""
    try:
        import kubernetes_validate
    except ImportError:
        unavailable("kubernetes-validate is not installed (pip install kubernetes-validate)")

    def check(obj: dict[str, Any]) -> None:
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                name = f"{obj['kind']} {obj['metadata']['name']}"
                pytest.fail(f"{name} is not valid on Kubernetes {version}: {error}")

    return check
