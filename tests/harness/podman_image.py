"""The loadgen image, built from scratch with podman once per test session and removed after it
(tests/image and tests/kubernetes share it; tests/conftest.py registers these fixtures).

No registry is needed: the base is made from Debian's packages with mmdebstrap (Debian's python3
is 3.11, as the image needs) and imported, then the Dockerfile builds on it through
``--build-arg BASE``, as a user without a registry would. Nothing is cached across runs.
Where podman cannot run (not installed, not root) the tests skip, and fail under
LOADGEN_REQUIRE_BROKERS=1.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from loadgen.pytest_plugin.require import unavailable

REPO = Path(__file__).resolve().parents[2]
APT_SOURCES = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
DEBIAN_MIRROR = re.compile(r"(https?://\S+/debian)/?(?=\s|$)", re.MULTILINE)
# podman's default runtime (crun) refuses hybrid cgroups where runc works; its default ulimits
# can exceed the hard limits; cgroupfs needs no systemd.
CONTAINERS_CONF = '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\n'
BASE_PACKAGES = "python3,python3-venv,python3-pip,ca-certificates"
HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


@dataclass(frozen=True)
class Podman:
    """podman with this module's own configuration; every call is checked and bounded."""

    env: dict[str, str]

    def __call__(
        self, *args: str, timeout: float = 60, env: Mapping[str, str] = {}
    ) -> subprocess.CompletedProcess[str]:
        done = self.run(*args, timeout=timeout, env=env)
        if done.returncode != 0:
            pytest.fail(f"podman {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done

    def run(
        self, *args: str, timeout: float = 60, env: Mapping[str, str] = {}
    ) -> subprocess.CompletedProcess[str]:
        """``env``: variables for podman itself, e.g. for ``run -e NAME`` to pass on."""
        return subprocess.run(
            ["podman", "--runtime", "runc", *args],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def debian_mirror() -> str | None:
    """The Debian mirror the host's apt sources name (deb822 or one-line format)."""
    for source in APT_SOURCES:
        if source.is_file() and (found := DEBIAN_MIRROR.search(source.read_text(errors="replace"))):
            return found.group(1)
    return None


@pytest.fixture(scope="session")
def podman(tmp_path_factory) -> Podman:
    missing = [tool for tool in ("podman", "runc", "mmdebstrap") if shutil.which(tool) is None]
    if missing:
        unavailable(f"{', '.join(missing)} not installed (apt-get install podman runc mmdebstrap)")
    if os.geteuid() != 0:
        unavailable("the image tests run podman and mmdebstrap as root")
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text(CONTAINERS_CONF)
    tool = Podman({**os.environ, "CONTAINERS_CONF": str(conf)})
    info = tool.run("info")
    if info.returncode != 0:
        unavailable(f"podman cannot run: {info.stderr.strip()[-300:]}")
    return tool


@pytest.fixture(scope="session")
def image(podman, tmp_path_factory) -> Iterator[str]:
    """The image's tag: built on a fresh Debian base, removed (with the base) afterwards."""
    mirror = debian_mirror()
    if mirror is None:
        unavailable("no Debian mirror in the apt sources for mmdebstrap")
    tar = tmp_path_factory.mktemp("base") / "base.tar"
    made = subprocess.run(
        [
            "mmdebstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", "bookworm", str(tar),
            f"deb {mirror} bookworm main", f"deb {mirror} bookworm-updates main",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    base = f"localhost/loadgen-test-base:{os.getpid()}"
    tag = f"localhost/loadgen-test:{os.getpid()}"
    try:
        podman("import", str(tar), base, timeout=120)
        tar.unlink()
        podman(
            "build", "--layers=false", "--network", "host",
            "-v", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro",
            "--build-arg", f"BASE={base}", "-t", tag, str(REPO),
            timeout=420,
        )  # fmt: skip
        yield tag
    finally:
        podman.run("rmi", "--force", tag, base, timeout=120)
