"""The fallback policy: which errors move a run's files, where to, and what is recorded.

The writers here are fakes that raise as a full disk would; the real disks (small tmpfs mounts)
are in tests/faults/test_disk.py.
"""

import errno
import logging

import pytest

from loadgen.base.errors import NoPlaceLeft
from loadgen.base.files import all_or_none, write_text_atomic
from loadgen.result_files.destination import Destination, fallback_directories


def full_in(*full):
    """A writer that fails with ENOSPC in the ``full`` directories and names where it wrote."""
    calls = []

    def write(directory):
        calls.append(directory)
        if directory in full:
            raise OSError(errno.ENOSPC, "No space left on device", str(directory / "r.json"))
        (directory / "r.json").write_text("{}")
        return directory / "r.json"

    return write, calls


def test_files_stay_where_asked_while_that_works(tmp_path):
    asked, spare = tmp_path / "asked", tmp_path / "spare"
    asked.mkdir()
    destination = Destination(asked, [spare])
    write, calls = full_in()
    assert destination.write(write) == asked / "r.json"
    assert calls == [asked] and destination.moves == [] and destination.record() is None
    assert not spare.exists()


def test_a_full_disk_moves_the_files_to_the_next_place_and_says_so(tmp_path, caplog):
    asked, spare = tmp_path / "asked", tmp_path / "spare"
    asked.mkdir()
    destination = Destination(asked, [spare])
    write, calls = full_in(asked)
    with caplog.at_level(logging.WARNING, logger="loadgen.results"):
        assert destination.write(write) == spare / "r.json"
    assert calls == [asked, spare]
    [move] = destination.moves
    assert (move.left, move.to) == (asked, spare)
    assert move.reason.startswith("no space left on device")
    assert destination.record() == {
        "asked": str(asked),
        "writtenTo": str(spare),
        "reason": move.reason,
    }
    [line] = caplog.messages
    assert str(asked) in line and str(spare) in line and "no space left" in line


def test_later_writes_go_to_the_new_place_without_trying_the_old_one(tmp_path):
    asked, spare = tmp_path / "asked", tmp_path / "spare"
    asked.mkdir()
    destination = Destination(asked, [spare])
    write, calls = full_in(asked)
    destination.write(write)
    destination.write(write)
    assert calls == [asked, spare, spare]
    assert destination.visited == [asked]


def test_a_place_that_fails_its_check_is_passed_over(tmp_path, caplog):
    asked, spare = tmp_path / "asked", tmp_path / "spare"
    asked.mkdir()
    blocked = tmp_path / "file"
    blocked.write_text("")
    destination = Destination(asked, [blocked / "cache", spare])
    write, calls = full_in(asked)
    with caplog.at_level(logging.WARNING, logger="loadgen.results"):
        assert destination.write(write) == spare / "r.json"
    assert calls == [asked, spare]  # the check refused the cache: fn was not called there
    [line] = caplog.messages
    assert f"nor in {blocked / 'cache'} (parent {blocked} is a file)" in line


def test_no_place_left_raises_and_records_where_nothing_went(tmp_path):
    asked, spare = tmp_path / "asked", tmp_path / "spare"
    asked.mkdir()
    destination = Destination(asked, [spare])
    write, calls = full_in(asked, spare)
    with pytest.raises(NoPlaceLeft) as raised:
        destination.write(write)
    assert raised.value.exit_code == 6 and str(asked) in str(raised.value)
    assert calls == [asked, spare] and destination.directory is None
    assert destination.record()["writtenTo"] is None
    with pytest.raises(NoPlaceLeft):  # and at once after that: nothing is tried again
        destination.write(write)
    assert calls == [asked, spare]


@pytest.mark.parametrize("code", [errno.EROFS, errno.EIO, errno.EDQUOT, errno.EACCES])
def test_every_disk_error_moves(tmp_path, code):
    asked, spare = tmp_path / "asked", tmp_path / "spare"

    def write(directory):
        if directory == asked:
            raise OSError(code, "refused")
        return directory

    assert Destination(asked, [spare]).write(write) == spare


def test_an_error_that_is_not_the_disks_is_raised_and_nothing_moves(tmp_path):
    destination = Destination(tmp_path, [tmp_path / "spare"])

    def write(directory):
        raise OSError(errno.EINVAL, "Invalid argument")

    with pytest.raises(OSError, match="Invalid argument"):
        destination.write(write)
    assert destination.moves == [] and destination.directory == tmp_path


def test_the_fallbacks_follow_xdg_cache_home_and_tmpdir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    assert fallback_directories() == [
        tmp_path / "cache" / "loadgen" / "results",
        tmp_path / "tmp" / "loadgen-results",
    ]
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert fallback_directories()[0] == tmp_path / "home" / ".cache" / "loadgen" / "results"


def test_a_set_of_files_is_left_whole_or_not_at_all(tmp_path):
    first, second = tmp_path / "summary.json", tmp_path / "summary.html"
    with pytest.raises(OSError), all_or_none() as written:
        write_text_atomic(first, "{}")
        written.append(first)
        raise OSError(28, "No space left on device")  # the second file's write
    assert not first.exists()
    with all_or_none() as written:
        write_text_atomic(first, "{}")
        written.append(first)
        write_text_atomic(second, "<html>")
    assert first.read_text() == "{}" and second.exists()
