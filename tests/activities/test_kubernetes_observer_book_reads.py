"""The Kubernetes observer's activity reads its workflow's book (a query: a workflow task on a worker and a
request to the server) at its first round and then once every `book_seconds`, however often the objects'
changes wake a round; a round without changes waits until the next read is due."""

from __future__ import annotations

import pytest

from activities.kubernetes.observer import book_read_due, seconds_to_book_read


@pytest.mark.parametrize(
    ("read_at", "now", "due"),
    [
        (None, 5.0, True),  # the first round
        (10.0, 10.1, False),  # a round woken by a change 0.1 s after the read
        (10.0, 10.99, False),
        (10.0, 11.0, True),
        (10.0, 14.0, True),
    ],
)
def test_the_book_is_read_once_per_interval(read_at: float | None, now: float, due: bool) -> None:
    assert book_read_due(read_at, now, 1.0) is due


@pytest.mark.parametrize(
    ("read_at", "now", "wait"),
    [(None, 5.0, 0.0), (10.0, 10.25, 0.75), (10.0, 11.0, 0.0), (10.0, 12.5, 0.0)],
)
def test_a_quiet_round_waits_until_the_next_read(read_at: float | None, now: float, wait: float) -> None:
    assert seconds_to_book_read(read_at, now, 1.0) == pytest.approx(wait)
