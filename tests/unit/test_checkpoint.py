"""Checkpoints: every interval while writing is cheap; at most a tenth of the time when not."""

import json
import time

from loadgen.results import checkpoint
from loadgen.results.checkpoint import Checkpoint
from loadgen.results.hlog import hlog_path
from loadgen.stats import IntervalStats


def interval(number):
    return IntervalStats(start_ms=number * 1000, end_ms=(number + 1) * 1000, sent=10)


def test_each_interval_is_written_when_writing_is_cheap(tmp_path):
    built = []

    def build(so_far):
        built.append(len(so_far))
        return {"intervals": len(so_far)}

    passed_on = []
    # read before and after each write: intervals 1 s apart, writes of 10 ms
    ticks = iter(t + d for t in range(100) for d in (0, 0.01))
    on_interval = Checkpoint(tmp_path / "r.json", 0, build, lambda: next(ticks)).chain(
        lambda stats, backlog: passed_on.append((stats.start_ms, backlog))
    )
    for number in range(5):
        on_interval(interval(number), number)
    assert built == [1, 2, 3, 4, 5]
    assert json.loads((tmp_path / "r.json").read_text()) == {"intervals": 5}
    assert hlog_path(tmp_path / "r.json", "publish").exists()
    assert passed_on == [(number * 1000, number) for number in range(5)]


def test_slow_checkpoints_are_skipped_to_stay_under_a_tenth_of_the_time(tmp_path, monkeypatch):
    # the heap trim after each write counts as checkpoint time too, and in a process with a big
    # heap (this test suite's) it alone can take ~0.1 s: the builds are what is timed here
    monkeypatch.setattr(checkpoint, "release_free_memory", lambda: None)
    built = []

    def slow_build(so_far):
        time.sleep(0.02)
        built.append(len(so_far))
        return {}

    on_interval = Checkpoint(tmp_path / "r.json", 0, slow_build).chain(None)
    started = time.monotonic()
    for number in range(40):
        on_interval(interval(number), 0)
        time.sleep(0.01)  # intervals 10 ms apart, each write 20 ms: at most one in ~20 fits
    elapsed = time.monotonic() - started
    assert built[0] == 1  # the first interval is always written
    assert 2 <= len(built) <= 0.1 * elapsed / 0.02 + 2


def test_a_failing_write_is_reported_and_the_run_goes_on(tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("")
    on_interval = Checkpoint(blocked / "r.json", 0, lambda so_far: {}).chain(None)
    on_interval(interval(0), 0)  # a directory that cannot exist: the write fails
    assert "writing the checkpoint" in caplog.text
