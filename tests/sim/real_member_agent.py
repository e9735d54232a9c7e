"""One real :class:`~groupcoord.member.GroupMember` in its own process, for
``test_sim_vs_real``: the real-time twin of one simulated member.

Usage: ``python real_member_agent.py '<settings as JSON>'`` (keys: ``bootstrap``,
``group_id``, ``topic``, ``assignor``, ``client_id``, ``session_timeout_ms``,
``heartbeat_interval_ms``, ``max_poll_interval_ms``, ``retry_backoff_ms``).

The process imports everything, prints ``ready`` and waits for commands on stdin, so that
the test can start members at chosen moments without paying for Python's start-up then:

- ``start``: build the GroupMember and poll it in a loop, like an application whose topic
  has no records (the simulated workload is 0 records/s, so the simulated application
  waits inside ``poll()`` too);
- ``close``: stop polling and close the member (LeaveGroup), then exit.

A crash is the test's SIGKILL. Events go to stdout, one JSON object per line, with
``t = time.monotonic()`` (CLOCK_MONOTONIC, the same clock in every process of the machine):
``ready``, ``started`` (just before the GroupMember is built), ``joining`` (a JoinGroup
goes out), ``assigned`` / ``revoked`` / ``lost`` (``gen``: the member's generation during
the callback, ``parts``: the callback's partitions, ``owned``: the assignment after it),
``closed``, ``error``; with ``AGENT_TRACE=1`` in the environment also ``tx`` / ``sent`` /
``rx``: every request the machine emits, when it was written to the socket, every
response.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

from groupcoord.assignors import Assignor, CooperativeStickyAssignor, RangeAssignor
from groupcoord.member import GroupMember, RebalanceListener
from groupcoord.types import TopicPartition

ASSIGNORS: dict[str, type[Assignor]] = {
    "range": RangeAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
#: the application's loop: poll() returns at once when the member is stable; it "works"
#: this long between polls so that four members do not spin on two cores
POLL_GAP_S = 0.01

_out = threading.Lock()


def emit(ev: str, **fields: Any) -> None:
    line = json.dumps({"ev": ev, "t": time.monotonic(), **fields})
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _parts(partitions: frozenset[TopicPartition]) -> list[int]:
    return sorted(tp.partition for tp in partitions)


class Reporting(RebalanceListener):
    def __init__(self) -> None:
        self.member: GroupMember | None = None
        self.owned: set[TopicPartition] = set()

    def _report(self, kind: str, partitions: frozenset[TopicPartition]) -> None:
        gen = self.member.generation() if self.member is not None else -1
        if kind == "assigned":
            self.owned |= partitions
        else:
            self.owned -= partitions
        emit(kind, gen=gen, parts=_parts(partitions), owned=_parts(frozenset(self.owned)))

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._report("assigned", partitions)

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._report("revoked", partitions)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._report("lost", partitions)


def report_requests(trace: bool) -> None:
    """Report each JoinGroup the member sends (``joining``: when the group work starts, after
    the GroupMember's start-up) and, with ``trace``, every request and response (``tx``,
    ``sent``, ``rx``): the machine's own methods, wrapped."""
    from groupcoord.coordinator.messages import JoinGroupRequest
    from groupcoord.member.machine import MemberMachine

    receive, next_requests, send = (
        MemberMachine.receive,
        MemberMachine.next_requests,
        GroupMember._send,
    )

    def traced_next(self: MemberMachine, now_ms: int) -> list[Any]:
        out = next_requests(self, now_ms)
        for request in out:
            if isinstance(request, JoinGroupRequest):
                emit("joining")
            if trace:
                emit("tx", what=type(request).__name__, gen=getattr(request, "generation_id", None))
        return out

    def traced_receive(self: MemberMachine, response: Any, now_ms: int) -> None:
        error = getattr(response, "error", None)
        emit("rx", what=type(response).__name__, error=getattr(error, "__name__", None))
        receive(self, response, now_ms)

    def traced_send(self: GroupMember, request: Any) -> None:
        send(self, request)
        emit("sent", what=type(request).__name__)

    MemberMachine.next_requests = traced_next  # type: ignore[method-assign]
    if trace:
        MemberMachine.receive = traced_receive  # type: ignore[method-assign]
        GroupMember._send = traced_send  # type: ignore[method-assign]


def main() -> None:
    settings = json.loads(sys.argv[1])
    report_requests(trace=bool(os.environ.get("AGENT_TRACE")))
    start, close = threading.Event(), threading.Event()

    def read_commands() -> None:
        for line in sys.stdin:
            command = line.strip()
            if command == "start":
                start.set()
            elif command == "close":
                close.set()
        close.set()  # stdin closed: the test is gone

    threading.Thread(target=read_commands, daemon=True).start()
    emit("ready")
    start.wait()
    if close.is_set():
        return
    listener = Reporting()
    emit("started")
    member = GroupMember(
        bootstrap_servers=settings["bootstrap"],
        group_id=settings["group_id"],
        topics=[settings["topic"]],
        assignors=[ASSIGNORS[settings["assignor"]]()],
        session_timeout_ms=settings["session_timeout_ms"],
        heartbeat_interval_ms=settings["heartbeat_interval_ms"],
        max_poll_interval_ms=settings["max_poll_interval_ms"],
        listener=listener,
        client_id=settings["client_id"],
        retry_backoff_ms=settings["retry_backoff_ms"],
    )
    listener.member = member
    try:
        while not close.is_set():
            member.poll(100)
            close.wait(POLL_GAP_S)
        member.close()
        emit("closed")
    except Exception:
        emit("error", msg=traceback.format_exc())
        raise


if __name__ == "__main__":
    main()
