"""The coordinator numbers producers disjointly across workers: message ids carry the number, so
two workers producing to one topic must never share one (their messages would count as
duplicates of each other)."""

from loadgen.distributed.client import ControlPlane, WorkerClient
from loadgen.distributed.ensemble import Ensemble
from loadgen.distributed.split import OMB
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.plan import consumer_subscriptions, producer_topics


def test_each_producer_worker_gets_its_own_range_of_producer_numbers(monkeypatch):
    posted = []

    async def request(self, method, path, body=None, *, timeout_s=30.0):
        posted.append((self.url, path, body))
        return {"topics": ["t0", "t1"]} if path == "/topics" else {}

    monkeypatch.setattr(WorkerClient, "request", request)
    plane = ControlPlane(None)
    try:
        urls = [f"http://w{i}" for i in range(4)]  # OMB: w0 and w1 produce, w2 and w3 consume
        ensemble = Ensemble(plane, urls, DriverSpec(name="k", kind="kafka"), OMB)
        topics = ensemble.create_topics(2, 1)
        ensemble.create_consumers(consumer_subscriptions(topics, 1, 1))
        ensemble.create_producers(producer_topics(topics, 3))
    finally:
        plane.close()
    bodies = {url: body for url, path, body in posted if path == "/producers"}
    assert set(bodies) == {"http://w0", "http://w1"}
    numbers = [
        set(range(body["first_number"], body["first_number"] + len(body["topics"])))
        for body in bodies.values()
    ]
    assert not numbers[0] & numbers[1]
    assert numbers[0] | numbers[1] == set(range(6))
