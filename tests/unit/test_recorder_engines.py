"""Each worker says which recorder engine it runs, and the result lists them
(``run.recorderEngines``): a worker's own, not the coordinator's, since an image or a host without
a compiler (or ``LOADGEN_PURE_PYTHON=1``) records in pure Python at a lower ceiling."""

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

from loadgen.distributed.client import ControlPlane, WorkerClient
from loadgen.distributed.ensemble import Ensemble
from loadgen.distributed.server import _Routes
from loadgen.distributed.service import WorkerService
from loadgen.distributed.split import OMB
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine import recorder
from loadgen.formats import worker_protocol as wire


def test_a_workers_health_names_its_recorder_engine():
    with ThreadPoolExecutor(1) as executor:
        answer = asyncio.run(_Routes(WorkerService(), executor).health(None))
    health = json.loads(answer.text)
    assert health["recorderEngine"] == recorder.ENGINE
    assert health["recorderEngine"] in ("c", "python")


def test_the_placement_lists_each_workers_engine_as_it_said(monkeypatch):
    said = {"http://w0": "c", "http://w1": "python", "http://w2": None}  # w2: an older loadgen

    async def request(self, method, path, body=None, *, timeout_s=30.0):
        if path == "/health":
            health = {"loadgen": "0.1.0", "protocol": wire.PROTOCOL, "busy": False}
            engine = said[self.url]
            return health if engine is None else health | {"recorderEngine": engine}
        if path == "/clock":
            return {"receivedNs": time.time_ns(), "repliedNs": time.time_ns()}
        return {}

    monkeypatch.setattr(WorkerClient, "request", request)
    plane = ControlPlane(None)
    try:
        ensemble = Ensemble(plane, list(said), DriverSpec(name="k", kind="kafka"), OMB)
        ensemble.check_reachable(1.0)
        placement = ensemble.placement()
    finally:
        plane.close()
    assert placement["recorderEngines"] == said
    assert placement["workers"] == list(said)
