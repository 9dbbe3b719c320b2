"""kaos.backoff: the retry delays of helm failures, tool discovery and process restarts."""

from kaos.backoff import Backoff, exponential


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_backoff_doubles_up_to_the_cap_and_resets_on_success():
    clock = Clock()
    backoff = Backoff(base=1.0, cap=5.0, clock=clock)
    assert [backoff.fail("a") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert backoff.blocked("a") and not backoff.blocked("b")
    clock.now += 5.0
    assert not backoff.blocked("a")
    backoff.succeed("a")
    assert backoff.fail("a") == 1.0


def test_exponential_is_the_delay_after_the_nth_failure():
    assert [exponential(n, 0.5, 30.0) for n in (1, 2, 3, 7, 8)] == [0.5, 1.0, 2.0, 30.0, 30.0]


def test_remaining_counts_down_to_zero():
    clock = Clock()
    backoff = Backoff(base=2.0, clock=clock)
    assert backoff.remaining("a") == 0.0
    backoff.fail("a")
    clock.now += 0.5
    assert backoff.remaining("a") == 1.5
    clock.now += 2.0
    assert backoff.remaining("a") == 0.0 and not backoff.blocked("a")
