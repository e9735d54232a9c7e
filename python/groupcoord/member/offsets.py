"""The member's offsets: commits and OffsetFetches waiting to go out, and their answers.

The machine keeps two queues (lists of :class:`QueuedCommit` and :class:`QueuedFetch`); this
module says which entries are due, reads OffsetCommit/OffsetFetch answers and completes or
re-queues their handles. What an answer means for the membership (reset it, rejoin, find
the coordinator again, fail the member) is the machine's part, from the same
:mod:`~groupcoord.member.error_actions` table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from groupcoord.coordinator.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchResponse,
)
from groupcoord.errors import GroupcoordError, KafkaError
from groupcoord.member.error_actions import ErrorAction, action_for
from groupcoord.member.handles import CommitFailedError, CommitHandle, FetchHandle
from groupcoord.types import TopicPartition

__all__ = [
    "QueuedCommit",
    "QueuedFetch",
    "checked_offsets",
    "commit_errors",
    "fail_commits",
    "fetched_offsets",
    "settle_commit",
    "split_due_commits",
    "split_due_fetches",
]


@dataclass(slots=True)
class QueuedCommit:
    handle: CommitHandle
    not_before_ms: int = 0
    #: answered REBALANCE_IN_PROGRESS: wait for a generation newer than the one it carried
    min_generation: int = -1


@dataclass(slots=True)
class QueuedFetch:
    handle: FetchHandle
    not_before_ms: int = 0


def checked_offsets(offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """``offsets`` as the machine commits them; ``TypeError``/``ValueError`` if malformed."""
    clean: dict[TopicPartition, int] = {}
    for tp, offset in offsets.items():
        if not isinstance(tp, tuple) or len(tp) != 2 or not isinstance(tp[0], str):
            raise TypeError(f"commit keys must be TopicPartition, got {tp!r}")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError(f"offset of {tp} must be an int, got {type(offset).__name__}")
        if not 0 <= offset < 2**63:
            raise ValueError(f"invalid offset {offset} for {tp}: must be >= 0")
        clean[TopicPartition(tp[0], tp[1])] = offset
    return clean


def split_due_commits(
    queue: Iterable[QueuedCommit], now_ms: int, generation_id: int
) -> tuple[list[QueuedCommit], list[QueuedCommit]]:
    """(the commits to send now, in queue order; those that keep waiting)."""
    due: list[QueuedCommit] = []
    keep: list[QueuedCommit] = []
    for queued in queue:
        if queued.not_before_ms > now_ms or generation_id < queued.min_generation:
            keep.append(queued)
        else:
            due.append(queued)
    return due, keep


def split_due_fetches(
    queue: Iterable[QueuedFetch], now_ms: int
) -> tuple[list[QueuedFetch], list[QueuedFetch]]:
    """(the fetches to send now, in queue order; those that keep waiting)."""
    due: list[QueuedFetch] = []
    keep: list[QueuedFetch] = []
    for queued in queue:
        (keep if queued.not_before_ms > now_ms else due).append(queued)
    return due, keep


def fail_commits(queue: list[QueuedCommit], error: Callable[[], GroupcoordError]) -> None:
    """Fail every queued commit with an ``error()`` of its own and empty the queue."""
    for queued in queue:
        queued.handle.fail(error())
    queue.clear()


def commit_errors(response: OffsetCommitResponse) -> dict[TopicPartition, type[KafkaError]]:
    """The partitions an OffsetCommit answer refused, with their errors."""
    errors: dict[TopicPartition, type[KafkaError]] = {}
    for topic in response.topics:
        for p in topic.partitions:
            if p.error is not None:
                errors[TopicPartition(topic.name, p.partition_index)] = p.error
    return errors


def settle_commit(
    handle: CommitHandle,
    errors: Mapping[TopicPartition, type[KafkaError]],
    action: ErrorAction,
    *,
    generation_id: int,
    now_ms: int,
    retry_backoff_ms: int,
) -> QueuedCommit | None:
    """The commit side of a refused OffsetCommit (``errors``, acting as ``action``, not
    FATAL: failing the member is the machine's): the entry to queue again, or ``None``
    after failing ``handle``. ``generation_id`` is the one the commit carried."""
    if action is ErrorAction.REJOIN:
        # Goes out again once a rebalance has completed (a newer generation is stable).
        return QueuedCommit(handle, min_generation=generation_id + 1)
    if action is ErrorAction.REDISCOVER:
        return QueuedCommit(handle)
    if action is ErrorAction.RETRY:
        return QueuedCommit(handle, now_ms + retry_backoff_ms)
    kinds = set(errors.values())
    if action is ErrorAction.RESET_MEMBER:
        first = next(
            k for k in kinds if action_for(OffsetCommitRequest, k) is ErrorAction.RESET_MEMBER
        )
        handle.fail(
            CommitFailedError(f"the group rebalanced and gave the partitions away ({first.name})"),
            errors,
        )
        return None
    if action is not ErrorAction.FAIL:
        raise ValueError(f"settle_commit cannot act on {action}")
    first_error = min(kinds, key=lambda k: k.code)
    handle.fail(first_error(f"offset commit refused for {len(errors)} partitions"), errors)
    return None


def fetched_offsets(
    response: OffsetFetchResponse,
) -> tuple[dict[TopicPartition, int], type[KafkaError] | None]:
    """(the committed offsets an OffsetFetch answer carries; its error, ``None`` if none).
    Partitions without a committed offset are left out; if partitions carry errors, the
    last one found is the answer's."""
    error = response.error
    topics = response.topics
    if response.groups:  # v8+: one group per request, ours
        group = response.groups[0]
        error = error or group.error
        topics = group.topics
    offsets: dict[TopicPartition, int] = {}
    if error is None:
        for topic in topics:
            for p in topic.partitions:
                if p.error is not None:
                    error = p.error
                elif p.committed_offset >= 0:
                    offsets[TopicPartition(topic.name, p.partition_index)] = p.committed_offset
    return offsets, error
