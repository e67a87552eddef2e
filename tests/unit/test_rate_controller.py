"""OMB's RateController, checked against the examples of OMB's RateControllerTest."""

import pytest

from loadgen.engine.rate_controller import PUBLISH_BACKLOG, RAMP_UP, RECEIVE_BACKLOG, RateController

SECOND_NS = 1_000_000_000


def test_a_period_without_backlog_doubles_the_rate_and_keeps_the_factor_at_its_maximum():
    controller = RateController()
    decision = controller.next_rate(10_000, SECOND_NS, 10_000, 10_000)
    assert decision.rate == 20_000
    assert decision.reason == RAMP_UP
    assert controller.ramping_factor == 1.0


def test_a_receive_backlog_ramps_down_to_what_was_received_and_halves_the_factor():
    controller = RateController()
    controller.next_rate(10_000, SECOND_NS, 10_000, 10_000)
    decision = controller.next_rate(20_000, SECOND_NS, 20_000, 15_000)
    assert decision.rate == 5_000
    assert decision.reason == RECEIVE_BACKLOG
    assert controller.ramping_factor == 0.5


def test_a_publish_backlog_ramps_down_to_what_was_published_and_halves_the_factor():
    controller = RateController()
    controller.next_rate(10_000, SECOND_NS, 10_000, 10_000)
    decision = controller.next_rate(20_000, SECOND_NS, 15_000, 20_000)
    assert decision.rate == 5_000
    assert decision.reason == PUBLISH_BACKLOG
    assert controller.ramping_factor == 0.5


def test_a_clean_period_after_a_ramp_down_doubles_the_factor_before_applying_it():
    controller = RateController()
    controller.next_rate(10_000, SECOND_NS, 10_000, 10_000)
    controller.next_rate(20_000, SECOND_NS, 20_000, 15_000)  # down to 5 000, factor 0.5
    decision = controller.next_rate(5_000, SECOND_NS, 25_000, 25_000)
    assert decision.rate == 10_000
    assert controller.ramping_factor == 1.0


def test_backlogs_at_the_limit_still_ramp_up():
    controller = RateController()
    decision = controller.next_rate(10_000, SECOND_NS, 9_000, 8_000)  # both backlogs exactly 1000
    assert decision.reason == RAMP_UP


def test_the_factor_never_drops_below_its_minimum():
    controller = RateController()
    sent = 0
    for _ in range(20):
        sent += 100  # far below the 10 000 expected: a publish backlog every period
        controller.next_rate(10_000, SECOND_NS, sent, sent)
    assert controller.ramping_factor == pytest.approx(0.01)


def test_rates_scale_with_the_period_length():
    controller = RateController()
    # 3 s at 10 000 msg/s: 30 000 expected, 12 000 published -> 4 000 msg/s achieved
    decision = controller.next_rate(10_000, 3 * SECOND_NS, 12_000, 12_000)
    assert decision.reason == PUBLISH_BACKLOG
    assert decision.rate == pytest.approx(4_000)
