"""Python threads named for the operating system too, so ``top -H``, ``ps -L``, ``perf`` and
``/proc/<pid>/task/<tid>/comm`` tell loadgen's producer loop, consumers and journal writer
apart (CPython before 3.14 leaves every thread named after the program). ``bench/thread_cpu.py``
reads them to put a CPU share on each of loadgen's threads.
"""

from __future__ import annotations

import ctypes
import logging
import threading

log = logging.getLogger("loadgen.base.thread_names")

OS_NAME_BYTES = 15
"""Linux keeps 15 bytes of a thread's name (16 with the terminating NUL)."""


def _setname() -> ctypes._CFuncPtr | None:
    """glibc's ``pthread_setname_np``, or None where the C library has none."""
    try:
        function = ctypes.CDLL(None).pthread_setname_np
    except (AttributeError, OSError):
        return None
    function.argtypes = (ctypes.c_ulong, ctypes.c_char_p)
    function.restype = ctypes.c_int
    return function


_SETNAME = _setname()


def os_name(name: str) -> bytes:
    """``name`` as the OS keeps it: UTF-8, cut to :data:`OS_NAME_BYTES` on a character."""
    return name.encode()[:OS_NAME_BYTES].decode(errors="ignore").encode()


def _name(thread: threading.Thread) -> None:
    """``thread``'s Python name at the OS level (``_SETNAME`` is there: the callers check)."""
    assert _SETNAME is not None and thread.ident is not None
    failed = _SETNAME(thread.ident, os_name(thread.name))
    if failed:
        log.debug("naming thread %s failed: error %d", thread.name, failed)


def name_this_thread() -> None:
    """The OS name of the calling thread, for a thread started after the load (when
    :func:`name_threads_for_the_os` ran)."""
    if _SETNAME is not None:
        _name(threading.current_thread())


def name_threads_for_the_os() -> None:
    """Give every thread Python started, but the main one, its Python name at the OS level.

    The main thread keeps the program's name: it is the process's name in ``ps`` and
    ``pgrep``. Threads a client library started and that called into Python (listed as
    ``Dummy-N``) keep their own names, and may have ended without Python knowing: their handle
    must not be used. Best effort: where the C library cannot (not glibc), the threads keep the
    program's name too."""
    if _SETNAME is None:
        return
    main = threading.main_thread()
    for thread in threading.enumerate():
        foreign = isinstance(thread, threading._DummyThread)
        if thread is not main and not foreign and thread.ident is not None and thread.is_alive():
            _name(thread)
