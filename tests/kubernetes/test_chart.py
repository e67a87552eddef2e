"""The Helm chart (deploy/helm/loadgen) as helm renders it: lint-clean with every values file it
ships, every object valid against Kubernetes' own schemas (strict), the coordinator Job running
`loadgen run` on every worker's DNS name, the token only ever in a Secret, and the plain
manifests (deploy/kubernetes) the chart's own render."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
import yaml
from tests.kubernetes.chart import (
    CHART,
    MANIFESTS,
    REPO,
    SHIPPED_VALUES,
    manifest_files,
    one,
    parse,
    render_manifests,
)

from loadgen.base.version import __version__

VALUES_FILES = [None, *SHIPPED_VALUES]
"""The chart's defaults, then each shipped values file."""
SENTINEL = "not-a-real-token-5e1f"


def values_id(path: Path | None) -> str:
    return "defaults" if path is None else path.name


def render(helm, values: Path | None = None, **settings: str) -> list[dict]:
    return parse(helm.template(*([values] if values else []), settings=settings))


def container(pod_owner: dict) -> dict:
    [only] = pod_owner["spec"]["template"]["spec"]["containers"]
    return only


def flag(args: list[str], name: str) -> list[str]:
    """Every value given to ``name`` in ``args``."""
    return [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == name]


@pytest.mark.parametrize("values", VALUES_FILES, ids=values_id)
def test_helm_lint_passes_strictly(helm, values):
    done = helm.run("lint", "--strict", str(CHART), *(["--values", str(values)] if values else []))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("values", VALUES_FILES, ids=values_id)
def test_every_rendered_object_is_valid_against_kubernetes_schemas(helm, validate, values):
    objects = render(helm, values)
    assert {"StatefulSet", "Service", "Job"} <= {o["kind"] for o in objects}
    for obj in objects:
        validate(obj)


def test_the_plain_manifests_are_the_charts_render(helm, validate):
    fresh = render_manifests(helm)
    committed = {path.name: path.read_text() for path in MANIFESTS.glob("*.yaml")}
    assert committed == fresh, "deploy/kubernetes is stale: python tests/kubernetes/chart.py"
    for name, text in fresh.items():
        if name != "kustomization.yaml":
            for obj in parse(text):
                validate(obj)


def test_the_job_runs_loadgen_on_every_workers_stable_dns_name(helm):
    objects = render(helm)
    workers, service, job = (one(objects, k) for k in ("StatefulSet", "Service", "Job"))
    port = service["spec"]["ports"][0]["port"]
    names = [f"{workers['metadata']['name']}-{i}" for i in range(workers["spec"]["replicas"])]
    # a StatefulSet's pod i is <name>-i, under its headless Service: <pod>.<service>
    assert workers["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    pod_labels = workers["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert workers["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    args = container(job)["args"]
    urls = [f"http://{pod}.{service['metadata']['name']}:{port}" for pod in names]
    assert flag(args, "--workers") == [",".join(urls)]
    assert args[0] == "run"
    assert flag(args, "--workers-wait") == ["300s"]
    assert flag(args, "-d") == ["/config/kafka.yaml"]
    assert args[args.index("-d") + 2] == "/config/workload.yaml"
    assert flag(args, "-o") == ["/results"]


def test_a_cluster_domain_makes_the_urls_fully_qualified(helm):
    job = one(parse(helm.template(settings={"clusterDomain": "example.local"}, namespace="bench")),
              "Job")  # fmt: skip
    [urls] = flag(container(job)["args"], "--workers")
    assert (
        urls.split(",")[0] == "http://loadgen-worker-0.loadgen-workers.bench.svc.example.local:8080"
    )


def test_the_job_fails_when_the_run_does(helm):
    """No retry, no restart, and loadgen itself as the container's process (the image's
    entrypoint, no shell in between): the pod ends with loadgen's exit code."""
    job = one(render(helm), "Job")
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert "command" not in container(job)


def test_the_token_comes_only_from_the_secret(helm):
    rendered = helm.template(settings={"token.value": SENTINEL})
    objects = parse(rendered)
    secret = one(objects, "Secret")
    assert base64.b64decode(secret["data"]["token"]).decode() == SENTINEL
    outside = yaml.safe_dump_all([o for o in objects if o["kind"] != "Secret"])
    assert SENTINEL not in outside
    for owner in (one(objects, "StatefulSet"), one(objects, "Job")):
        [token] = [e for e in container(owner)["env"] if e["name"] == "LOADGEN_TOKEN"]
        assert token == {
            "name": "LOADGEN_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": secret["metadata"]["name"], "key": "token"}},
        }


def test_an_existing_secret_keeps_the_token_out_of_the_render(helm):
    rendered = helm.template(settings={"token.existingSecret": "mine", "token.value": SENTINEL})
    encoded = base64.b64encode(SENTINEL.encode()).decode()
    assert SENTINEL not in rendered and encoded not in rendered
    objects = parse(rendered)
    assert "Secret" not in {o["kind"] for o in objects}
    for owner in (one(objects, "StatefulSet"), one(objects, "Job")):
        [token] = [e for e in container(owner)["env"] if e["name"] == "LOADGEN_TOKEN"]
        assert token["valueFrom"]["secretKeyRef"]["name"] == "mine"


def test_a_generated_token_differs_per_install(helm):
    first, second = (one(render(helm), "Secret")["data"]["token"] for _ in range(2))
    assert first != second and len(base64.b64decode(first)) == 32


def test_the_readiness_probe_reads_the_token_from_the_environment(helm):
    worker = container(one(render(helm), "StatefulSet"))
    probe = worker["readinessProbe"]
    assert "httpGet" not in probe
    script = probe["exec"]["command"][-1]
    assert 'os.environ["LOADGEN_TOKEN"]' in script and "http://127.0.0.1:8080/health" in script
    assert worker["args"] == ["worker", "--bind", "0.0.0.0:8080"]


def test_the_image_tag_defaults_to_the_package_version(helm):
    """(The appVersion is the package version: tests/unit/test_helm_chart_version.py.)"""
    objects = render(helm)
    for owner in (one(objects, "StatefulSet"), one(objects, "Job")):
        assert container(owner)["image"] == f"loadgen:{__version__}"
    tagged = render(helm, **{"image.repository": "registry.example/loadgen", "image.tag": "1.2"})
    assert container(one(tagged, "Job"))["image"] == "registry.example/loadgen:1.2"


def test_the_kafka_values_judge_the_run_against_a_cluster_url(helm):
    job = one(render(helm, CHART / "values-kafka.yaml"), "Job")
    args, env = container(job)["args"], container(job)["env"]
    assert flag(args, "--slo") == ["e2e.p99<50ms", "lost==0", "rate>=0.99"]
    [bootstrap] = [e for e in env if e["name"] == "KAFKA_BOOTSTRAP_SERVERS"]
    assert bootstrap["value"] == "my-cluster-kafka-bootstrap.kafka:9092"


def test_existing_objects_pipeline_and_metrics(helm):
    objects = render(helm, CHART / "values-existing.yaml")
    assert {o["kind"] for o in objects} == {"Service", "StatefulSet", "Job"}
    workers, job = one(objects, "StatefulSet"), one(objects, "Job")
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == "loadgen-files"
    assert volumes["results"]["persistentVolumeClaim"]["claimName"] == "loadgen-results"
    args = container(job)["args"]
    assert flag(args, "-d") == ["/config/my-driver.yaml"]
    assert flag(args, "--pipeline") == ["/results/pipeline"]  # on the results volume
    mounts = {m["name"]: m["mountPath"] for m in container(job)["volumeMounts"]}
    assert mounts == {"config": "/config", "results": "/results"}
    for owner in (workers, job):
        annotations = owner["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == "9100"
        assert flag(container(owner)["args"], "--metrics-port") == ["9100"]
    anti = workers["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == (
        "kubernetes.io/hostname"
    )


@pytest.mark.parametrize(
    ("choice", "rule"),
    [
        ("soft", "preferredDuringSchedulingIgnoredDuringExecution"),
        ("hard", "requiredDuringSchedulingIgnoredDuringExecution"),
        ("", None),
    ],
)
def test_pod_anti_affinity_is_settable(helm, choice, rule):
    workers = one(render(helm, **{"workers.podAntiAffinity": choice}), "StatefulSet")
    affinity = workers["spec"]["template"]["spec"].get("affinity")
    assert (affinity is None) if rule is None else (rule in affinity["podAntiAffinity"])


def test_a_misspelt_anti_affinity_fails_the_render(helm):
    with pytest.raises(RuntimeError, match="podAntiAffinity"):
        helm.template(settings={"workers.podAntiAffinity": "sometimes"})


def test_the_default_files_are_the_compose_files():
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())["config"]["files"]
    for name in ("kafka.yaml", "workload.yaml"):
        compose = yaml.safe_load((REPO / "deploy" / name).read_text())
        assert yaml.safe_load(defaults[name]) == compose


def test_the_readme_documents_every_value():
    """Each value has a row in the README's table; blocks passed on to Kubernetes as they are
    (a file map, security contexts, the probe's timings) have one row for the block."""
    whole = {"files", "podSecurityContext", "securityContext", "readinessProbe"}

    def leaves(tree: dict, prefix: str = "") -> list[str]:
        found = []
        for key, value in tree.items():
            path = f"{prefix}{key}"
            deeper = isinstance(value, dict) and value and key not in whole
            found += leaves(value, path + ".") if deeper else [path]
        return found

    readme = (CHART / "README.md").read_text()
    documented = set(re.findall(r"^\| `([^`]+)` \|", readme, re.MULTILINE))
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert set(leaves(values)) - documented == set()


def test_manifest_files_split_the_render_by_template():
    rendered = (
        "---\n# Source: loadgen/templates/a.yaml\nkind: A\n"
        "---\n# Source: loadgen/templates/b.yaml\nkind: B\n"
        "---\n# Source: loadgen/templates/a.yaml\nkind: C\n"
    )
    files = manifest_files(rendered)
    assert sorted(files) == ["a.yaml", "b.yaml", "kustomization.yaml"]
    assert [o["kind"] for o in parse(files["a.yaml"])] == ["A", "C"]
    assert yaml.safe_load(files["kustomization.yaml"])["resources"] == ["a.yaml", "b.yaml"]
