"""The kopf handlers' own parts: the log filter of the resync timer."""

import logging

from kaos.operator.handlers import QuietTimers


def test_quiet_timers_drops_only_the_timer_success_line():
    quiet = QuietTimers()
    record = lambda message: logging.LogRecord("kopf.objects", logging.INFO, "", 0, message, (), None)  # noqa: E731
    assert not quiet.filter(record("Timer 'resync' succeeded."))
    assert quiet.filter(record("Handler 'reconcile' succeeded."))
    assert quiet.filter(record("Timer 'resync' failed with an exception."))
