"""Local runs poll at once, back off to the configured interval, and never sleep after the end."""

import asyncio
import itertools

import armada_flyte
from armada_flyte.local import run as local_run
from armada_flyte.local.run import poll_delays


def test_delays_start_small_and_back_off_to_the_interval():
    delays = list(itertools.islice(poll_delays(0.05, 0.5), 9))
    assert delays[0] == 0.05
    assert all(b >= a for a, b in zip(delays, delays[1:]))
    assert delays[-1] == 0.5 and max(delays) == 0.5


class _Outcome:
    def __init__(self, terminal):
        self.terminal = terminal


class _ConnectorEndingOnPoll:
    """A stand-in that reports the job terminal on poll number `last` (no server involved)."""

    def __init__(self, last):
        self.polls = 0
        self.last = last

    async def poll(self, meta):
        self.polls += 1
        return _Outcome(self.polls == self.last)


def test_polls_at_once_and_not_after_the_terminal_state(monkeypatch):
    armada_flyte.configure(first_poll_seconds=0.01, poll_interval_seconds=0.02)
    slept = []
    real_sleep = asyncio.sleep

    async def recording_sleep(seconds):
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(local_run.asyncio, "sleep", recording_sleep)
    connector = _ConnectorEndingOnPoll(last=3)
    outcome = asyncio.run(local_run._wait_for_end(connector, meta=None))
    assert outcome.terminal and connector.polls == 3
    assert slept == [0.01, 0.015]  # two waits between three polls, none after the last


def test_a_job_already_done_is_not_waited_for(monkeypatch):
    slept = []

    async def recording_sleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr(local_run.asyncio, "sleep", recording_sleep)
    asyncio.run(local_run._wait_for_end(_ConnectorEndingOnPoll(last=1), meta=None))
    assert slept == []
