"""loadgen's Helm chart as the tests see it: rendered by ``helm template``, parsed into objects.

The plain manifests in ``deploy/kubernetes`` are this module's render of the chart with its
default values, one file per template, and a kustomization listing them; the one exception to
the defaults is the token: a committed render must not carry a generated Secret, so it reads
an existing one, ``loadgen-token``, which the user makes. Regenerate them after changing the
chart (the chart tests fail until then)::

    python tests/kubernetes/chart.py
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy/helm/loadgen"
MANIFESTS = REPO / "deploy/kubernetes"
SHIPPED_VALUES = sorted(CHART.glob("values-*.yaml"))
"""The example values files the chart ships, beside its values.yaml."""
RELEASE = "loadgen"
TOOLS = Path.home() / ".cache/loadgen-tools"
"""Where .ci/run installs helm (``GOBIN=... go install helm.sh/helm/v4/cmd/helm@v4.3.2``)."""
HELM_INSTALL = "GOBIN=~/.cache/loadgen-tools go install helm.sh/helm/v4/cmd/helm@v4.3.2"
MANIFEST_TOKEN_SECRET = "loadgen-token"
MANIFEST_SETTINGS = {"token.existingSecret": MANIFEST_TOKEN_SECRET}
SOURCE = re.compile(r"^# Source: [^/]+/templates/(\S+)$", re.MULTILINE)
HEADER = (
    "# Rendered from deploy/helm/loadgen with its default values and an existing token Secret\n"
    f"# ({MANIFEST_TOKEN_SECRET}) by `python tests/kubernetes/chart.py`; do not edit: change the\n"
    "# chart and render again (a test compares these files with a fresh render).\n"
)
KUSTOMIZATION_HEADER = (
    "# loadgen for kubectl and kustomize: `kubectl apply -k deploy/kubernetes`, after making the\n"
    "# workers' token Secret (any long random string):\n"
    f"#   kubectl create secret generic {MANIFEST_TOKEN_SECRET} --from-literal=token=...\n"
    "# The driver and workload files are in configmap.yaml: patch it (or replace it with a\n"
    "# configMapGenerator) for your cluster. docs/kubernetes.md has the rest.\n"
)


def find_helm() -> str | None:
    """helm on the PATH, else where .ci/run installs it."""
    found = shutil.which("helm")
    if found:
        return found
    installed = TOOLS / "helm"
    return str(installed) if os.access(installed, os.X_OK) else None


@dataclass(frozen=True)
class Helm:
    """The helm binary; every call bounded, its output returned."""

    path: str

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.path, *args], capture_output=True, text=True, timeout=timeout)

    def template(
        self,
        *values: Path,
        settings: dict[str, str] | None = None,
        release: str = RELEASE,
        namespace: str = "default",
    ) -> str:
        """``helm template`` of the chart with these values files and ``--set`` settings;
        raises with helm's message when it fails."""
        args = ["template", release, str(CHART), "--namespace", namespace]
        for path in values:
            args += ["--values", str(path)]
        for name, value in (settings or {}).items():
            args += ["--set-string", f"{name}={value}"]
        done = self.run(*args)
        if done.returncode != 0:
            raise RuntimeError(f"helm {' '.join(args)}:\n{done.stderr}")
        return done.stdout


def parse(rendered: str) -> list[dict[str, Any]]:
    """The objects of a render, in order (empty documents left out)."""
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The render's only object of ``kind``."""
    [found] = [o for o in objects if o["kind"] == kind]
    return found


def manifest_files(rendered: str) -> dict[str, str]:
    """File name -> text for deploy/kubernetes: each template's objects, and the kustomization."""
    files: dict[str, str] = {}
    for document in rendered.split("\n---\n"):
        source = SOURCE.search(document)
        if source is None or not yaml.safe_load(document):
            continue
        name = source.group(1)
        body = document.removeprefix("---\n").strip("\n") + "\n"
        files[name] = files[name] + "---\n" + body if name in files else HEADER + body
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": sorted(files),
    }
    files["kustomization.yaml"] = KUSTOMIZATION_HEADER + yaml.safe_dump(
        kustomization, sort_keys=False
    )
    return files


def render_manifests(helm: Helm) -> dict[str, str]:
    return manifest_files(helm.template(settings=MANIFEST_SETTINGS))


def main() -> int:
    path = find_helm()
    if path is None:
        print(f"helm not found: {HELM_INSTALL}", file=sys.stderr)
        return 1
    files = render_manifests(Helm(path))
    for stale in MANIFESTS.glob("*.yaml"):
        if stale.name not in files:
            stale.unlink()
    MANIFESTS.mkdir(exist_ok=True)
    for name, text in files.items():
        (MANIFESTS / name).write_text(text)
    print(f"wrote {', '.join(sorted(files))} in {MANIFESTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
