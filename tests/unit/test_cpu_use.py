"""The run's own CPU and its threads' wait for a CPU: read from schedstat, per interval, summed
over threads and processes, and judged against the host-busy share."""

import os
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from harness.rates import judge_rate
from loadgen.base.calibration import current
from loadgen.base.cpu_use import TASKS, CpuMeter, CpuUse
from loadgen.engine.outcome import RunOutcome
from loadgen.engine.stats import IntervalStats, merge_all
from loadgen.formats.client_cpu import client_cpu_fields
from loadgen.formats.result_json import ResultHeader, build_test_result
from loadgen.report.console import host_busy_note


def write_task(tasks, tid, on_cpu, waiting, slices):
    (tasks / tid).mkdir(parents=True, exist_ok=True)
    (tasks / tid / "schedstat").write_text(f"{on_cpu} {waiting} {slices}\n")


def test_a_take_is_the_change_since_the_last_one_summed_over_threads(tmp_path):
    write_task(tmp_path, "1", 1_000, 100, 7)
    write_task(tmp_path, "2", 5_000, 500, 9)
    meter = CpuMeter(tmp_path)
    write_task(tmp_path, "1", 1_600, 130, 10)
    write_task(tmp_path, "2", 5_050, 900, 11)
    assert meter.take() == CpuUse(cpu_ns=650, wait_ns=430, slices=5)
    assert meter.take() == CpuUse(0, 0, 0)


def test_a_new_thread_counts_from_its_start_and_an_ended_one_is_not_subtracted(tmp_path):
    write_task(tmp_path, "1", 1_000, 100, 7)
    meter = CpuMeter(tmp_path)
    (tmp_path / "1" / "schedstat").unlink()  # ended; a thread without schedstat is skipped too
    write_task(tmp_path, "3", 200, 20, 2)
    assert meter.take() == CpuUse(200, 20, 2)


def test_without_schedstat_nothing_is_measured(tmp_path):
    assert CpuMeter(tmp_path / "absent").take() == CpuUse(0, 0, 0)


needs_schedstat = pytest.mark.skipif(
    not (TASKS / str(os.getpid()) / "schedstat").exists(), reason="no /proc schedstat here"
)


def spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@needs_schedstat
def test_this_process_cpu_is_counted():
    meter = CpuMeter()
    spin(0.3)
    assert meter.take().cpu_ns >= 0.29e9


@needs_schedstat
def test_a_cpu_taken_by_another_process_shows_as_wait():
    """This thread and a busy child pinned to one CPU: the scheduler shares it, so this thread
    waits for the CPU about as long as it runs."""
    cpu = min(os.sched_getaffinity(0))
    hog = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"]
    )
    allowed = os.sched_getaffinity(0)
    try:
        time.sleep(0.5)  # the child pinned and spinning
        os.sched_setaffinity(0, {cpu})
        meter = CpuMeter()
        spin(0.3)
        use = meter.take()
    finally:
        os.sched_setaffinity(0, allowed)
        hog.kill()
        hog.wait()
    assert use.wait_ns / (use.cpu_ns + use.wait_ns) >= current().host_busy_share * 0.6, use


def interval(start_ms, *, cpu_ns, wait_ns, slices=1, sent=1_000, received=1_000, warmup=False):
    return IntervalStats(
        start_ms,
        start_ms + 1_000,
        sent=sent,
        received=received,
        cpu_ns=cpu_ns,
        cpu_wait_ns=wait_ns,
        cpu_slices=slices,
        warmup=warmup,
    )


def test_worker_parts_add_up_when_merged():
    parts = [interval(0, cpu_ns=3, wait_ns=4, slices=5), interval(0, cpu_ns=10, wait_ns=20)]
    merged = merge_all(parts)
    assert (merged.cpu_ns, merged.cpu_wait_ns, merged.cpu_slices) == (13, 24, 6)


def test_the_block_is_over_the_measured_intervals_per_message_sent_or_received():
    measured = [
        interval(0, cpu_ns=2_000_000_000, wait_ns=500_000_000, slices=6_000),
        interval(1_000, cpu_ns=1_000_000_000, wait_ns=500_000_000, slices=4_000, received=2_000),
    ]
    assert client_cpu_fields(measured) == {
        "cpuSeconds": 3.0,
        "runQueueWaitSeconds": 1.0,
        "runQueueWaitShare": 0.25,
        "timeSlices": 10_000,
        "runQueueWaitPerSliceMicros": 100.0,
        "cpuMicrosPerMessage": 3e6 / 5_000,
        "hostBusy": False,
    }


def busy_if(*, share: float, wait_us: float) -> bool:
    slices = 1_000
    wait_ns = int(wait_us * 1_000 * slices)
    cpu_ns = int(wait_ns * (1 - share) / share)
    return client_cpu_fields([interval(0, cpu_ns=cpu_ns, wait_ns=wait_ns, slices=slices)])[
        "hostBusy"
    ]


def test_a_busy_host_makes_threads_wait_long_and_often():
    assert busy_if(share=current().host_busy_share, wait_us=current().host_busy_wait_us)
    assert busy_if(share=0.9, wait_us=2_000)
    # an idle host that picks up each of many wake-ups a little late is not busy (librdkafka:
    # half the time waiting, 38 µs a wait, on an idle 2-core VM)
    assert not busy_if(share=0.52, wait_us=38)
    assert not busy_if(share=0.2, wait_us=500)  # long waits, but rarely


def test_nothing_sent_or_received_has_no_cost_per_message():
    block = client_cpu_fields([interval(0, cpu_ns=1_000, wait_ns=1_000, sent=0, received=0)])
    assert block["cpuMicrosPerMessage"] is None


def test_no_block_where_nothing_was_measured():
    assert client_cpu_fields([interval(0, cpu_ns=0, wait_ns=0)]) is None
    assert client_cpu_fields([]) is None


def test_the_console_warns_only_when_the_host_was_busy():
    busy = client_cpu_fields(
        [interval(0, cpu_ns=1_000_000_000, wait_ns=3_000_000_000, slices=10_000)]
    )
    note = host_busy_note({"clientCpu": busy})
    assert note is not None and "waited for a CPU 75% of the time" in note
    assert "3.0 s waiting, 1.0 s on a CPU, 300 µs a wait" in note
    assert host_busy_note({"clientCpu": {**busy, "hostBusy": False}}) is None
    assert host_busy_note({}) is None


def result_of(intervals):
    header = ResultHeader("w", "Memory", 1024, 1, 1, 1, 1, subscriptions_per_topic=1)
    return build_test_result(header, RunOutcome(intervals), run={})


def test_warm_up_cpu_is_left_out_of_the_result():
    warm = interval(0, cpu_ns=9_000_000_000, wait_ns=9_000_000_000, warmup=True)
    measured = interval(1_000, cpu_ns=1_000_000_000, wait_ns=0)
    result = result_of([warm, measured])
    assert result["clientCpu"]["cpuSeconds"] == 1.0
    assert not result["clientCpu"]["hostBusy"]
    assert "clientCpu" not in result_of([replace(measured, cpu_ns=0)])


BUSY = {"clientCpu": client_cpu_fields([interval(0, cpu_ns=1_000_000, wait_ns=3_000_000)])}
IDLE = {"clientCpu": client_cpu_fields([interval(0, cpu_ns=3, wait_ns=1)])}


def test_a_test_holds_the_rate_on_a_host_that_gave_the_cpu():
    judge_rate(IDLE, 995, 1_000, rel=0.01)
    with pytest.raises(AssertionError, match=r"900 for 1,000 asked .* not busy"):
        judge_rate(IDLE, 900, 1_000, rel=0.01)
    with pytest.raises(AssertionError):  # a run that measured no CPU cannot excuse itself
        judge_rate({}, 900, 1_000, rel=0.01)


def test_a_test_skips_a_short_rate_on_a_busy_host_and_says_how_busy():
    judge_rate(BUSY, 1_000, 1_000, rel=0.01)  # held: judged, busy or not
    said = r"900 for 1,000 asked: not judged.* 75%.* 3,000 µs a wait"
    with pytest.raises(pytest.skip.Exception, match=said):
        judge_rate(BUSY, 900, 1_000, rel=0.01)
