"""How much of a driver log's end each place keeps (`log_tail`), and where the full log is kept
(`log_store_key`)."""

from __future__ import annotations

import pytest

from wire.driver_log import EVENT_TAIL, STATUS_TAIL, TailBound, log_store_key, log_tail

HUNDRED_LINES = "".join(f"line {number}\n" for number in range(1, 101))


@pytest.mark.parametrize(
    ("text", "bound", "tail"),
    [
        ("", TailBound(5, 100), ""),
        ("one\ntwo\nthree\n", TailBound(5, 100), "one\ntwo\nthree"),
        ("one\ntwo\nthree\n", TailBound(2, 100), "two\nthree"),
        # The byte bound keeps whole lines: "two\nthree" is 9 bytes, "three" 5.
        ("one\ntwo\nthree\n", TailBound(5, 8), "three"),
        ("one\ntwo\nthree", TailBound(5, 9), "two\nthree"),
        # A last line longer than the bound keeps its end.
        ("short\n" + "x" * 50 + "END\n", TailBound(5, 10), "x" * 7 + "END"),
        # Bytes, not characters: "é" is 2 bytes in UTF-8.
        ("aaa\néé\n", TailBound(5, 5), "éé"),
        ("aaa\néé\n", TailBound(5, 3), "é"),
        (HUNDRED_LINES, TailBound(0, 100), ""),
        (HUNDRED_LINES, TailBound(3, 0), ""),
    ],
)
def test_log_tail_keeps_whole_lines_of_the_end_within_both_bounds(
    text: str, bound: TailBound, tail: str
) -> None:
    assert log_tail(text, bound) == tail


def test_the_status_and_event_bounds_hold_for_a_long_log() -> None:
    long_log = "".join(f"{number:06d} " + "y" * 120 + "\n" for number in range(10_000))
    status_tail = log_tail(long_log, STATUS_TAIL)
    event_tail = log_tail(long_log, EVENT_TAIL)
    assert len(status_tail.encode()) <= STATUS_TAIL.max_bytes
    assert status_tail.count("\n") + 1 <= STATUS_TAIL.lines
    assert status_tail.endswith("009999 " + "y" * 120)
    # The Event's whole message (header and tail) stays within the 1 KiB an Event note may have.
    assert len(event_tail.encode()) <= EVENT_TAIL.max_bytes < 1024 - 200
    assert event_tail.endswith("009999 " + "y" * 120)


@pytest.mark.parametrize(
    ("namespace", "name", "submission_id", "key"),
    [
        ("default", "sample", "sample-abc12", "default/sample/sample-abc12.log"),
        ("team-a", "train.v2", "raysubmit_XyZ", "team-a/train.v2/raysubmit_XyZ.log"),
        # A user's spec.jobId never leaves its RayJob's folder.
        ("default", "sample", "../../etc/passwd", "default/sample/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd.log"),
        ("default", "sample", "..", "default/sample/%2E%2E.log"),
        ("default", "sample", "a b", "default/sample/a%20b.log"),
    ],
)
def test_the_store_key_is_namespace_name_and_submission_id(
    namespace: str, name: str, submission_id: str, key: str
) -> None:
    assert log_store_key(namespace, name, submission_id) == key
