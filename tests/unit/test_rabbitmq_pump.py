"""The stepped event loop the RabbitMQ producers live on."""

import threading

from loadgen_drivers.rabbitmq.pump import Pump


def test_a_step_runs_what_is_ready_and_returns():
    pump = Pump()
    ran = []
    pump.loop.call_soon(ran.append, "ready")
    pump.loop.call_later(60, ran.append, "much later")
    pump.step()
    assert ran == ["ready"]
    pump.close()


def test_run_until_ends_when_a_callback_wakes_it():
    pump = Pump()
    done = []

    def arrive():
        done.append(True)
        pump.wake()

    pump.loop.call_later(0.02, arrive)
    assert pump.run_until(lambda: bool(done), timeout_s=30)
    pump.close()


def test_run_until_gives_up_at_its_timeout():
    pump = Pump()
    assert pump.run_until(lambda: False, timeout_s=0.05) is False
    pump.close()


def test_wait_for_callback_ends_at_the_first_wake():
    pump = Pump()
    woken = []
    pump.loop.call_later(0.01, lambda: (woken.append(True), pump.wake()))
    pump.wait_for_callback(30)
    assert woken == [True]
    pump.close()


def test_a_thread_that_finds_the_loop_running_waits_instead_of_stepping_it():
    pump = Pump()
    inside = threading.Event()
    release = threading.Event()
    pump.loop.call_soon(lambda: (inside.set(), release.wait(5)))
    stepping = threading.Thread(target=pump.step)
    stepping.start()
    assert inside.wait(5)
    pump.step()  # the loop is running in the other thread: no RuntimeError, no second run
    assert pump.run_until(lambda: False, timeout_s=0.05) is False
    release.set()
    stepping.join(5)
    pump.close()
