"""Python threads named at the OS level, where ``top -H`` and /proc show them."""

import threading
from pathlib import Path

import pytest

from loadgen.base.thread_names import name_this_thread, name_threads_for_the_os, os_name
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.local_worker import LocalWorker
from loadgen_drivers.memory import Driver


def os_name_of(thread: threading.Thread) -> str:
    return Path(f"/proc/self/task/{thread.native_id}/comm").read_text().strip()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="no /proc/<pid>/task here")
def test_every_thread_but_the_main_one_gets_its_python_name_cut_to_15_bytes():
    release = threading.Event()
    threads = [
        threading.Thread(target=release.wait, name=name, daemon=True)
        for name in ("producer-loop", "kafka-consumer-topic-0000001")
    ]
    for thread in threads:
        thread.start()
    main_before = os_name_of(threading.main_thread())
    try:
        name_threads_for_the_os()
        assert [os_name_of(t) for t in threads] == ["producer-loop", "kafka-consumer-"]
        assert os_name_of(threading.main_thread()) == main_before
    finally:
        release.set()


def test_a_name_is_cut_on_a_character_not_inside_one():
    assert os_name("consumer-é-1234567") == "consumer-é-123".encode()  # é is two bytes
    assert os_name("consumer-abcdeé") == b"consumer-abcde"  # é would take bytes 15-16


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="no /proc/<pid>/task here")
def test_a_thread_started_later_names_itself():
    seen = []

    def body():
        name_this_thread()
        seen.append(os_name_of(threading.current_thread()))

    thread = threading.Thread(target=body, name="loadgen-journal")
    thread.start()
    thread.join()
    assert seen == ["loadgen-journal"]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="no /proc/<pid>/task here")
def test_a_worker_names_its_producer_loop_and_consumers_when_the_load_starts():
    worker = LocalWorker(Driver.from_config(DriverSpec(name="mem", kind="memory")))
    [topic] = worker.create_topics(1, 1)
    worker.create_consumers([(topic, "sub")])
    worker.create_producers([topic])
    worker.start_load(100, [bytes(64)], "NO_KEY")
    try:
        mine = [t for t in threading.enumerate() if t.name in ("producer-loop", "memory-consumer")]
        named = {os_name_of(t) for t in mine}
    finally:
        worker.stop_load(5)
        worker.close(delete_topics=True)
    assert named == {"producer-loop", "memory-consumer"}


def test_threads_a_client_started_keep_their_own_names():
    """A native thread that called into Python is listed as ``Dummy-N``: it keeps the name its
    library gave it (and once ended, its handle is stale and must not be used)."""
    import _thread

    listed, release = threading.Event(), threading.Event()
    found = []

    def client_thread():
        found.append(threading.current_thread())  # what a client's callback into Python does
        listed.set()
        release.wait(5)

    _thread.start_new_thread(client_thread, ())
    assert listed.wait(5)
    try:
        before = os_name_of(found[0])
        name_threads_for_the_os()
        assert os_name_of(found[0]) == before != os_name(found[0].name).decode()
    finally:
        release.set()
