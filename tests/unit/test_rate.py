import pytest

from loadgen.engine.rate import Schedule


def test_intended_times_follow_the_absolute_schedule():
    schedule = Schedule(start_ns=2_000_000_000, rate=1000)
    assert [schedule.intended_ns(i) for i in range(3)] == [
        2_000_000_000,
        2_001_000_000,
        2_002_000_000,
    ]


def test_due_counts_every_message_whose_time_has_come():
    schedule = Schedule(start_ns=1_000, rate=1_000_000_000 / 10)  # one every 10 ns
    assert schedule.due(999) == 0
    assert schedule.due(1_000) == 1
    assert schedule.due(1_009) == 1
    assert schedule.due(1_010) == 2
    assert schedule.due(1_095) == 10


def test_falling_behind_makes_everything_due_at_once_instead_of_stretching_the_schedule():
    schedule = Schedule(start_ns=0, rate=100)
    assert schedule.due(1_000_000_000) == 101  # one second late: 100 messages owed, plus #0


@pytest.mark.parametrize("rate", [0, -5, float("nan"), float("inf")])
def test_schedule_rejects_rates_that_are_not_finite_and_positive(rate):
    with pytest.raises(ValueError):
        Schedule(start_ns=0, rate=rate)
