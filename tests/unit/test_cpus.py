import os
import threading

import pytest

from loadgen.base.cpus import parse_cpus, pin, usable_cpus
from loadgen.base.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("1", {1}), ("0,2", {0, 2}), ("0-3", {0, 1, 2, 3}), (" 0-1, 5 ", {0, 1, 5}), ("2-2", {2})],
)
def test_cpu_lists_read_as_numbers_commas_and_ranges(text, cpus):
    assert parse_cpus(text) == cpus


@pytest.mark.parametrize("text", ["", "a", "1-", "3-1", "-1", "0,,1", "1.5"])
def test_what_is_not_a_cpu_list_is_a_config_error_naming_the_option(text):
    with pytest.raises(ConfigError) as caught:
        parse_cpus(text)
    assert caught.value.path == "--cpus" and caught.value.value == text
    assert "0-3" in str(caught.value)


def test_cpus_outside_the_affinity_are_refused_with_the_usable_ones():
    usable = sorted(os.sched_getaffinity(0))
    with pytest.raises(ConfigError, match=r"CPU 4096-4097 is not available") as caught:
        usable_cpus("4096-4097")
    assert caught.value.allowed.startswith(str(usable[0]))


def test_pin_moves_this_thread_and_the_threads_it_starts():
    before = os.sched_getaffinity(0)
    seen = []
    try:
        pin(usable_cpus(str(min(before))))
        worker = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        worker.start()
        worker.join()
        assert os.sched_getaffinity(0) == {min(before)}
        assert seen == [{min(before)}]
    finally:
        os.sched_setaffinity(0, before)
