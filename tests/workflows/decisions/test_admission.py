"""Queueing on a shared cluster: who is admitted, who waits in which order, who is told what."""

from __future__ import annotations

import pytest

from workflows.decisions.admission import (
    MAX_CONCURRENT_JOBS_ANNOTATION,
    Admission,
    Ticket,
    enqueue,
    max_concurrent_jobs,
    release,
)

A, B, C, D = (Ticket(f"rayjob/default/{name}", f"run-{name}") for name in "abcd")


@pytest.mark.parametrize(
    ("text", "limit"),
    [(None, None), ("5", 5), (" 2 ", 2), ("0", None), ("-1", None), ("many", None), ("1.5", None)],
)
def test_max_concurrent_jobs(text: str | None, limit: int | None) -> None:
    annotations = {} if text is None else {MAX_CONCURRENT_JOBS_ANNOTATION: text}
    assert max_concurrent_jobs(annotations) == limit


def test_the_first_ones_are_admitted_and_the_rest_wait_in_arrival_order() -> None:
    admission = Admission(limit=2)
    places = []
    for ticket in (A, B, C, D):
        change = enqueue(admission, ticket, 2)
        admission = change.admission
        places.append(admission.position(ticket))
        assert change.moved == {}
    assert places == [0, 0, 1, 2]
    assert (admission.holders, admission.queue) == ((A, B), (C, D))


def test_a_release_admits_the_next_in_line_and_tells_the_others_their_new_place() -> None:
    admission = Admission(2, holders=(A, B), queue=(C, D))
    change = release(admission, A)
    assert change.admitted == (C,)
    assert change.moved == {D: 1}
    assert (change.admission.holders, change.admission.queue) == ((B, C), (D,))


def test_leaving_the_queue_moves_only_those_behind() -> None:
    admission = Admission(1, holders=(A,), queue=(B, C, D))
    change = release(admission, B)
    assert change.admitted == ()
    assert change.moved == {C: 1, D: 2}
    assert release(admission, D).moved == {}


def test_asking_again_answers_the_same_place() -> None:
    admission = Admission(1, holders=(A,), queue=(B,))
    change = enqueue(admission, B, 1)
    assert change.admission == admission
    assert change.admission.position(B) == 1


def test_a_raised_limit_admits_waiting_ones_and_a_lowered_one_evicts_nobody() -> None:
    admission = Admission(1, holders=(A,), queue=(B, C))
    raised = enqueue(admission, D, 3)
    assert raised.admitted == (B, C)
    assert raised.admission.position(D) == 1
    lowered = enqueue(Admission(3, holders=(A, B, C)), D, 1)
    assert (lowered.admission.holders, lowered.admission.queue) == ((A, B, C), (D,))
    assert release(lowered.admission, A).admitted == ()


def test_a_new_run_of_the_same_rayjob_takes_no_earlier_runs_place() -> None:
    rerun = Ticket(A.workflow_id, "run-a2")
    change = enqueue(Admission(1, holders=(A,), queue=(B,)), rerun, 1)
    # The earlier run's slot is freed: B is admitted, the new run waits behind it.
    assert change.admitted == (B,)
    assert (change.admission.holders, change.admission.queue) == ((B,), (rerun,))


def test_releasing_an_unknown_ticket_changes_nothing() -> None:
    admission = Admission(1, holders=(A,), queue=(B,))
    change = release(admission, D)
    assert (change.admission, change.admitted, change.moved) == (admission, (), {})
