"""The chart's workers and coordinator as Pods, for ``podman kube play``.

podman 4.3 plays Pods, Deployments, PersistentVolumeClaims and ConfigMaps, not StatefulSets,
Jobs, Services or Secrets. A Pod form is what each controller would make: the StatefulSet's
pod i (its template, named ``<name>-i``, with the hostname and subdomain the controller gives
it) and the Job's one pod (its template, ``restartPolicy: Never``), the same containers,
arguments, environment and volumes. What stays a cluster's: the headless Service's DNS names
(``hostAliases`` given here stand in for them; a name left out is a worker pod with no address
yet, not scheduled, absent from the Service's DNS) and the Secret (a podman secret of the same
name holds it).
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

Obj = dict[str, Any]


def _pod(name: str, template: Obj, labels: Obj, **spec: Any) -> Obj:
    pod_spec = copy.deepcopy(template["spec"])
    for container in pod_spec["containers"]:
        container.pop("ports", None)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {**template["metadata"]["labels"], **labels}},
        "spec": {**pod_spec, **spec},
    }


def worker_pods(statefulset: Obj) -> list[Obj]:
    """The StatefulSet's pods: ``<name>-0`` ... with hostname and subdomain as Kubernetes sets
    them (the pod's DNS name is ``<hostname>.<subdomain>``)."""
    name, spec = statefulset["metadata"]["name"], statefulset["spec"]
    return [
        _pod(
            f"{name}-{i}",
            spec["template"],
            {"statefulset.kubernetes.io/pod-name": f"{name}-{i}"},
            hostname=f"{name}-{i}",
            subdomain=spec["serviceName"],
        )
        for i in range(spec["replicas"])
    ]


def coordinator_pod(job: Obj, hosts: dict[str, str]) -> Obj:
    """The Job's pod, with ``hosts`` (DNS name -> address) as its hostAliases."""
    name = job["metadata"]["name"]
    aliases = [{"ip": ip, "hostnames": [host]} for host, ip in sorted(hosts.items())]
    return _pod(name, job["spec"]["template"], {"job-name": name}, hostAliases=aliases)


def kube_yaml(*objects: Obj) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)


def container_name(pod: Obj) -> str:
    """podman's name for the pod's (only) container: ``<pod>-<container>``."""
    [container] = pod["spec"]["containers"]
    return f"{pod['metadata']['name']}-{container['name']}"
