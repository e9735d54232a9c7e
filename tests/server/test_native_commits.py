"""OffsetCommits the native shell takes itself (``native_io``): an admitted member's commit
that the coordinator would accept in full is taken on the shell's thread, stored through
the coordinator before any later request, and answered byte for byte as Python answers
it, once its write is reported; every other commit gets the coordinator's own answer.
(Durability across a SIGKILL: ``test_serve_sigkill.py``.)"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from group_calls import call, join, synced_member
from hypothesis import given, settings
from hypothesis import strategies as st
from server_harness import run_scenario
from wire_client import WireClient

from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    MemoryOffsetStore,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetStore,
    StoreRecord,
)
from groupcoord.errors import CoordinatorNotAvailableError
from groupcoord.protocol.group_messages import to_kio_request
from groupcoord.protocol.offset_commit_codec import encode_offset_commit_response
from groupcoord.server import Server
from waiting import wait_until_async

TOPICS = (("t", 3), ("u", 1))
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
OFFSET_METADATA_TOO_LARGE = 12

#: (topic, partition, offset, leader epoch, metadata)
Commit = tuple[str, int, int, int, str | None]


def native(**overrides: object) -> dict[str, object]:
    return {"native_io": True, "topics": TOPICS, **overrides}


def taken(server: Server) -> int:
    (listener,) = server.native_listeners
    counters = listener.counters()
    return int(counters["commits_taken"])


def commit(
    m: JoinGroupResponse,
    partitions: tuple[Commit, ...],
    version: int = 8,
    generation: int | None = None,
    member_id: str | None = None,
) -> OffsetCommitRequest:
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for topic, index, offset, epoch, metadata in partitions:
        by_topic.setdefault(topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=index,
                committed_offset=offset,
                committed_leader_epoch=epoch if version >= 6 else -1,
                committed_metadata=metadata,
            )
        )
    return OffsetCommitRequest(
        version=version,
        group_id="g",
        generation_id_or_member_epoch=m.generation_id if generation is None else generation,
        member_id=m.member_id if member_id is None else member_id,
        topics=tuple(
            OffsetCommitRequestTopic(name=name, partitions=tuple(ps))
            for name, ps in by_topic.items()
        ),
    )


async def commit_errors(client: WireClient, request: OffsetCommitRequest) -> list[int]:
    response = await call(client, request)
    assert isinstance(response, OffsetCommitResponse)
    return [p.error_code for t in response.topics for p in t.partitions]


async def fetched(client: WireClient, topic: str = "t", count: int = 3) -> list[object]:
    request = OffsetFetchRequest(
        version=7,
        group_id="g",
        topics=(OffsetFetchRequestTopic(name=topic, partition_indexes=tuple(range(count))),),
    )
    response = await call(client, request)
    assert isinstance(response, OffsetFetchResponse)
    return [
        (p.committed_offset, p.committed_leader_epoch, p.metadata)
        for p in response.topics[0].partitions
    ]


def test_a_members_commit_is_taken_natively_and_answered_byte_for_byte() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        before = taken(server)
        for version in range(2, 10):
            partitions = (("t", 2, 10 * version, 7, "m"), ("t", 0, version, -1, None))
            partitions += (("u", 0, 1, -1, "\u00e9"),)
            request = commit(member, partitions, version=version)
            correlation_id, frame = client.codec.encode(to_kio_request(request))
            await client.send_raw(frame)
            body = await client.receive_raw()
            answer = OffsetCommitResponse(
                version=version,
                topics=(
                    OffsetCommitResponseTopic(
                        name="t",
                        partitions=(
                            OffsetCommitResponsePartition(partition_index=2),
                            OffsetCommitResponsePartition(partition_index=0),
                        ),
                    ),
                    OffsetCommitResponseTopic(
                        name="u", partitions=(OffsetCommitResponsePartition(partition_index=0),)
                    ),
                ),
            )
            assert body == encode_offset_commit_response(correlation_id, answer)[4:]
        assert taken(server) == before + 8
        # stored as the coordinator stores them (v9's leader epoch, metadata)
        assert await fetched(client) == [(9, -1, ""), (-1, -1, ""), (90, 7, "m")]
        assert await fetched(client, "u", 1) == [(1, -1, "\u00e9")]
        await client.close()

    run_scenario(scenario, **native())


def test_commits_the_coordinator_would_not_accept_in_full_get_its_answers() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        before = taken(server)
        cases = [
            (commit(member, (("t", 3, 1, -1, None),)), [UNKNOWN_TOPIC_OR_PARTITION]),
            (commit(member, (("x", 0, 1, -1, None),)), [UNKNOWN_TOPIC_OR_PARTITION]),
            (
                commit(member, (("t", 0, 1, -1, "12345"), ("t", 1, 1, -1, "1234"))),
                [OFFSET_METADATA_TOO_LARGE, 0],
            ),
            (commit(member, (("t", 0, 1, -1, None),), generation=99), [ILLEGAL_GENERATION]),
            (commit(member, (("t", 0, 1, -1, None),), member_id="x"), [UNKNOWN_MEMBER_ID]),
            # a partition named twice is answered twice, as Kafka's coordinator does
            (commit(member, (("t", 1, 1, -1, None), ("t", 1, 2, -1, None))), [0, 0]),
        ]
        for request, errors in cases:
            assert await commit_errors(client, request) == errors, request
        assert taken(server) == before  # every one went to the coordinator
        assert await commit_errors(client, commit(member, (("t", 0, 5, -1, "1234"),))) == [0]
        assert taken(server) == before + 1
        await client.close()

    run_scenario(
        scenario,
        coordinator=CoordinatorConfig(
            group_initial_rebalance_delay_ms=0, offset_metadata_max_bytes=4
        ),
        **native(),
    )


def test_a_pipelined_fetch_sees_the_commit_taken_before_it() -> None:
    """A commit taken on the shell's thread is stored before the fetch behind it on the
    connection is handled, and their answers leave in request order."""

    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        before = taken(server)
        fetch = OffsetFetchRequest(
            version=7,
            group_id="g",
            topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(1,)),),
        )
        for offset in range(1, 30):
            sent = await client.send(to_kio_request(commit(member, (("t", 1, offset, -1, None),))))
            asked = await client.send(to_kio_request(fetch))
            first, second = await client.receive(), await client.receive()
            assert [first.correlation_id, second.correlation_id] == [sent, asked]
            assert second.response.topics[0].partitions[0].committed_offset == offset
        assert taken(server) == before + 29
        await client.close()

    run_scenario(scenario, **native())


def test_commits_alone_keep_a_member_alive_and_silence_expires_it() -> None:
    """The coordinator refreshes a member's session on its commit; so does the shell."""
    session_ms = 400

    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client, session_ms=session_ms)
        heartbeat = HeartbeatRequest(
            version=4, group_id="g", generation_id=member.generation_id, member_id=member.member_id
        )
        beat = await call(client, heartbeat)  # admits it to the shell
        assert isinstance(beat, HeartbeatResponse) and beat.error_code == 0
        before = taken(server)
        end = time.monotonic() + 3 * session_ms / 1000
        offset = 0
        while time.monotonic() < end:  # three session timeouts of commits, no heartbeat
            offset += 1
            assert await commit_errors(client, commit(member, (("t", 0, offset, -1, None),))) == [0]
            await asyncio.sleep(session_ms / 4000)
        assert taken(server) - before == offset >= 8
        described = await call(client, DescribeGroupsRequest(version=5, groups=("g",)))
        assert isinstance(described, DescribeGroupsResponse)
        assert [m.member_id for m in described.groups[0].members] == [member.member_id]
        await asyncio.sleep(2 * session_ms / 1000)
        late = commit(member, (("t", 0, offset + 1, -1, None),))
        assert await commit_errors(client, late) == [UNKNOWN_MEMBER_ID]
        await client.close()

    run_scenario(
        scenario,
        coordinator=CoordinatorConfig(
            group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=100
        ),
        **native(),
    )


class HeldWrites:
    """The server's store, with its next write held until ``release`` is set."""

    def __init__(self, store: OffsetStore) -> None:
        self.store = store
        self.holding = threading.Event()
        self.release = threading.Event()

    def write(self, records: Sequence[StoreRecord]) -> None:
        if not self.release.is_set():
            self.holding.set()
            self.release.wait(10)
        self.store.write(records)

    def close(self) -> None:
        self.store.close()


async def admitted_member_with_held_writes(
    server: Server,
) -> tuple[WireClient, JoinGroupResponse, HeldWrites]:
    """A client whose lone member is admitted (its commits are taken by the shell), and
    the server's store with its next write held."""
    client = await WireClient.connect("127.0.0.1", server.port)
    member = await synced_member(client)
    beat = HeartbeatRequest(
        version=4, group_id="g", generation_id=member.generation_id, member_id=member.member_id
    )
    await call(client, beat)
    writer = server.gateway.writer
    held = HeldWrites(writer.store)
    writer.store = held  # type: ignore[assignment]
    return client, member, held


def test_commits_taken_during_a_write_wait_with_the_shell_and_go_as_one_batch(
    tmp_path: Path,
) -> None:
    """While the writer is busy the loop leaves the commits the shell takes with it, and
    takes them all when the transaction ends: one batch for commits that came one by one,
    none answered before it is written, the answers in request order."""

    async def scenario(server: Server) -> None:
        client, member, held = await admitted_member_with_held_writes(server)
        writer = server.gateway.writer
        transactions, batches, before = writer.transactions, writer.batches, taken(server)
        sent = [await client.send(to_kio_request(commit(member, (("t", 0, 1, -1, None),))))]
        assert await asyncio.to_thread(held.holding.wait, 5)
        for offset in range(2, 7):  # each read, taken and reported to the loop on its own
            request = commit(member, (("t", 0, offset, -1, None),))
            sent.append(await client.send(to_kio_request(request)))
            await asyncio.sleep(0.05)
        assert taken(server) == before + 6 and writer.busy
        held.release.set()
        answers = [await client.receive() for _ in sent]
        assert [a.correlation_id for a in answers] == sent
        assert all(
            p.error_code == 0 for a in answers for t in a.response.topics for p in t.partitions
        )
        assert (writer.transactions - transactions, writer.batches - batches) == (2, 2)
        assert await fetched(client) == [(6, -1, ""), (-1, -1, ""), (-1, -1, "")]
        await client.close()

    run_scenario(scenario, data_dir=tmp_path, **native())


def test_commits_taken_during_a_write_do_not_wake_the_loop(tmp_path: Path) -> None:
    """A transaction's end takes the commits the shell took meanwhile (``on_free``), so
    the shell does not wake the loop for them: it would find the writer busy and leave
    them (a wasted turn of the loop per transaction under a steady commit load). Once
    the writer is free again, a commit wakes it as before."""

    async def scenario(server: Server) -> None:
        client, member, held = await admitted_member_with_held_writes(server)
        (listener,) = server.native_listeners
        writer = server.gateway.writer
        first = await client.send(to_kio_request(commit(member, (("t", 0, 1, -1, None),))))
        assert await asyncio.to_thread(held.holding.wait, 5)
        wakes = listener.shell.counters()["python_wakes"]
        sent = [first]
        for offset in range(2, 7):
            request = commit(member, (("t", 0, offset, -1, None),))
            sent.append(await client.send(to_kio_request(request)))
        await wait_until_async(lambda: taken(server) >= 6)
        await asyncio.sleep(0.1)  # a wake-up the shell sent would have arrived by now
        assert listener.shell.counters()["python_wakes"] == wakes
        held.release.set()
        answers = [await client.receive() for _ in sent]
        assert [a.correlation_id for a in answers] == sent
        await wait_until_async(lambda: not writer.busy)
        # free again: the next commit wakes the loop and is answered
        wakes = listener.shell.counters()["python_wakes"]
        last = await client.send(to_kio_request(commit(member, (("t", 0, 7, -1, None),))))
        assert (await client.receive()).correlation_id == last
        assert listener.shell.counters()["python_wakes"] > wakes
        assert await fetched(client) == [(7, -1, ""), (-1, -1, ""), (-1, -1, "")]
        await client.close()

    run_scenario(scenario, data_dir=tmp_path, **native())


def test_a_graceful_shutdown_answers_the_commits_waiting_for_the_writer(tmp_path: Path) -> None:
    """Commits the shell holds while a write is under way are stored and answered before
    the connections close."""

    async def scenario(server: Server) -> None:
        client, member, held = await admitted_member_with_held_writes(server)
        sent = [await client.send(to_kio_request(commit(member, (("t", 0, 1, -1, None),))))]
        assert await asyncio.to_thread(held.holding.wait, 5)
        for offset in range(2, 5):
            request = commit(member, (("t", 0, offset, -1, None),))
            sent.append(await client.send(to_kio_request(request)))
        await asyncio.sleep(0.1)  # taken by the shell, left with it: the writer is busy
        closing = asyncio.ensure_future(server.close())
        await asyncio.sleep(0.05)
        held.release.set()
        answers = [await client.receive() for _ in sent]
        assert [a.correlation_id for a in answers] == sent
        assert all(
            p.error_code == 0 for a in answers for t in a.response.topics for p in t.partitions
        )
        await closing
        await client.close()

    run_scenario(scenario, data_dir=tmp_path, **native())


@pytest.mark.parametrize("native_io", [False, True], ids=["asyncio", "native"])
def test_a_failed_write_answers_every_partition_coordinator_not_available(
    native_io: bool,
) -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        beat = HeartbeatRequest(
            version=4, group_id="g", generation_id=member.generation_id, member_id=member.member_id
        )
        await call(client, beat)
        store = server.gateway.writer.store
        assert isinstance(store, MemoryOffsetStore)
        first = taken(server) if native_io else 0
        store.fail_writes = True
        partitions = (("t", 0, 5, -1, None), ("u", 0, 6, -1, None))
        code = CoordinatorNotAvailableError.code
        assert await commit_errors(client, commit(member, partitions)) == [code, code]
        store.fail_writes = False
        assert await fetched(client) == [(-1, -1, ""), (-1, -1, ""), (-1, -1, "")]
        if native_io:
            assert taken(server) == first + 1
        await client.close()

    run_scenario(scenario, native_io=native_io, topics=TOPICS)


@settings(max_examples=10, deadline=None)
@given(
    ops=st.lists(
        st.sampled_from(
            ["commit", "stale", "unknown", "beat", "stale-beat", "join", "leave", "describe",
             "fetch"]
        ),
        max_size=14,
    )
)  # fmt: skip
def test_the_native_shell_answers_as_the_asyncio_one(ops: list[str]) -> None:
    """The same requests to a server of each kind get the same answers and leave the same
    offsets, with heartbeats answered and commits taken natively wherever the member is
    admitted."""

    async def answers(server: Server) -> list[object]:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        others: list[WireClient] = []
        out: list[object] = []
        for step, op in enumerate(ops):
            stale = op.startswith("stale")
            generation = member.generation_id - stale
            if op in ("commit", "stale", "unknown"):
                one = (("t", step % 3, step, step % 2 - 1, f"s{step}"),)
                if op == "unknown":
                    one = (("t", 3, step, -1, None), ("u", 0, step, -1, None))
                out.append(await commit_errors(client, commit(member, one, generation=generation)))
            elif op in ("beat", "stale-beat"):
                beat = HeartbeatRequest(
                    version=4, group_id="g", generation_id=generation, member_id=member.member_id
                )
                response = await call(client, beat)
                assert isinstance(response, HeartbeatResponse)
                out.append(response.error_code)
            elif op == "join":  # a newcomer parks in a join phase it will not finish
                other = await WireClient.connect("127.0.0.1", server.port)
                asked = await call(other, join())
                assert isinstance(asked, JoinGroupResponse)
                await other.send(to_kio_request(join(asked.member_id)))
                others.append(other)
                await asyncio.sleep(0.02)
            elif op == "leave":
                leave = LeaveGroupRequest(
                    version=3, group_id="g", members=(MemberIdentity(member_id=member.member_id),)
                )
                out.append((await call(client, leave)).error_code)  # type: ignore[attr-defined]
            elif op == "describe":
                described = await call(client, DescribeGroupsRequest(version=5, groups=("g",)))
                assert isinstance(described, DescribeGroupsResponse)
                out.append(len(described.groups[0].members))
            else:
                out.append(await fetched(client))
        out.append(await fetched(client))
        out.append(await fetched(client, "u", 1))
        for other in (client, *others):
            await other.close()
        return out

    asyncio_answers = run_scenario(answers, native_io=False, topics=TOPICS)
    native_answers = run_scenario(answers, **native())
    assert native_answers == asyncio_answers


def _kafka_python_commits(port: int) -> list[int | None]:
    """A kafka-python consumer that joins group "kp", commits each of its partitions and
    reads the commits back."""
    from kafka import OffsetAndMetadata
    from kafka import TopicPartition as KafkaTopicPartition

    from kafka_python_consumer import subscribed_consumer

    consumer = subscribed_consumer(
        ["t"], bootstrap_servers=f"127.0.0.1:{port}", group_id="kp", enable_auto_commit=False
    )
    try:
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 3 and time.monotonic() < deadline:
            consumer.poll(timeout_ms=50)
        partitions = [KafkaTopicPartition("t", p) for p in range(3)]
        for round_ in range(1, 6):
            consumer.commit({tp: OffsetAndMetadata(10 * round_ + tp.partition, "kp", -1)
                             for tp in partitions})  # fmt: skip
        return [consumer.committed(tp) for tp in partitions]
    finally:
        consumer.close()


def _librdkafka_commits(port: int) -> list[int]:
    """The same with confluent-kafka (librdkafka), group "rd"."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as RdTopicPartition

    consumer = Consumer(
        {"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "rd", "enable.auto.commit": False}
    )
    try:
        consumer.subscribe(["t"])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 3 and time.monotonic() < deadline:
            consumer.poll(0.05)
        for round_ in range(1, 6):
            offsets = [RdTopicPartition("t", p, 10 * round_ + p) for p in range(3)]
            consumer.commit(offsets=offsets, asynchronous=False)
        committed = consumer.committed([RdTopicPartition("t", p) for p in range(3)], timeout=10)
        return [tp.offset for tp in committed]
    finally:
        consumer.close()


def test_real_clients_commits_are_taken_natively() -> None:
    """kafka-python's and librdkafka's own OffsetCommits are the shape the shell takes."""

    async def scenario(server: Server) -> None:
        before = taken(server)
        assert await asyncio.to_thread(_kafka_python_commits, server.port) == [50, 51, 52]
        after_kafka_python = taken(server)
        assert after_kafka_python - before == 5
        assert await asyncio.to_thread(_librdkafka_commits, server.port) == [50, 51, 52]
        assert taken(server) - after_kafka_python == 5

    run_scenario(scenario, **native())
