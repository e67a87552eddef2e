"""Checkpoints: every interval while writing is cheap; at most a tenth of the time when not."""

import json

from loadgen.listeners import Listeners, OnInterval
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
    checkpoint = Checkpoint(tmp_path / "r.json", 0, build, lambda: next(ticks))
    passing = OnInterval(lambda stats, backlog: passed_on.append((stats.start_ms, backlog)))
    on_interval = Listeners((checkpoint, passing)).interval
    for number in range(5):
        on_interval(interval(number), number)
    assert built == [1, 2, 3, 4, 5]
    assert json.loads((tmp_path / "r.json").read_text()) == {"intervals": 5}
    assert hlog_path(tmp_path / "r.json", "publish").exists()
    assert passed_on == [(number * 1000, number) for number in range(5)]


def test_slow_checkpoints_are_skipped_to_stay_under_a_tenth_of_the_time(tmp_path):
    # on a clock the test moves (real disks make real timings swing): each build takes 25 ms,
    # intervals come 10 ms apart, so after a write the next may start 250 ms later
    now = [0.0]
    built = []

    def slow_build(so_far):
        now[0] += 0.025
        built.append(len(so_far))
        return {}

    on_interval = Checkpoint(tmp_path / "r.json", 0, slow_build, lambda: now[0]).on_interval
    for number in range(60):
        on_interval(interval(number), 0)
        now[0] += 0.010
    # writes start at 0, 0.255 (the first interval at or after 0.25) and 0.51
    assert built == [1, 24, 47]
    assert json.loads((tmp_path / "r.json").read_text()) == {}


def test_a_failing_write_is_reported_and_the_run_goes_on(tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("")
    on_interval = Checkpoint(blocked / "r.json", 0, lambda so_far: {}).on_interval
    on_interval(interval(0), 0)  # a directory that cannot exist: the write fails
    assert "writing the checkpoint" in caplog.text
