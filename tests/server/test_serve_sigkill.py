"""Every commit ``groupcoord serve`` acknowledged survives a SIGKILL, with many clients
committing at once (so the kill lands while the writer thread has a group of commits in
one transaction, and more queued behind it). Over the asyncio shell (``--no-native-io``)
the clients commit as simple consumers (generation -1); over the native shell (the
default) each is the member of its own group, whose commits the shell takes on its
thread."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from pathlib import Path

import pytest
from group_calls import synced_member
from wire_client import WireClient

from groupcoord.coordinator import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from groupcoord.protocol.group_messages import from_kio_response, to_kio_request
from serve_process import ServerProcess

CLIENTS = 48
GROUPS = 8
PARTITIONS = CLIENTS // GROUPS

Key = tuple[str, int]


def _key(client: int, members: str | None) -> Key:
    """The group and partition client ``client`` commits to: with ``members`` (a run's
    prefix), a group of its own that it is the member of; else one of GROUPS shared
    groups, as a simple consumer."""
    if members is not None:
        return f"{members}{client}", client % PARTITIONS
    return f"g{client % GROUPS}", client // GROUPS


async def _committer(
    port: int,
    client: int,
    first: int,
    sent: dict[Key, int],
    acked: dict[Key, int],
    members: str | None,
) -> None:
    """Commit ever larger offsets to this client's own partition, one at a time, until
    the server dies; ``sent`` is the last offset sent, ``acked`` the last acknowledged."""
    group, partition = _key(client, members)
    conn = await WireClient.connect("127.0.0.1", port)
    generation, member_id = -1, ""
    if members is not None:
        joined = await synced_member(conn, group)
        generation, member_id = joined.generation_id, joined.member_id
    offset = first
    try:
        while True:
            offset += 1
            request = OffsetCommitRequest(
                version=8,
                group_id=group,
                generation_id_or_member_epoch=generation,
                member_id=member_id,
                topics=(
                    OffsetCommitRequestTopic(
                        name="t",
                        partitions=(
                            OffsetCommitRequestPartition(
                                partition_index=partition, committed_offset=offset
                            ),
                        ),
                    ),
                ),
            )
            sent[(group, partition)] = offset
            response = from_kio_response(8, 8, await conn.call(to_kio_request(request)))
            assert isinstance(response, OffsetCommitResponse)
            if response.topics[0].partitions[0].error is None:
                acked[(group, partition)] = offset
    except (EOFError, ConnectionError, asyncio.IncompleteReadError):
        return  # killed
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


async def _commit_until_killed(
    server: ServerProcess, first: int, kill_after: int, members: str | None
) -> tuple[dict[Key, int], dict[Key, int]]:
    sent: dict[Key, int] = {}
    acked: dict[Key, int] = {}
    tasks = [
        asyncio.ensure_future(_committer(server.port, c, first, sent, acked, members))
        for c in range(CLIENTS)
    ]
    try:
        async with asyncio.timeout(60):
            while sum(o - first for o in acked.values()) < kill_after:
                await asyncio.sleep(0.002)
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGKILL)  # mid-flight: every client has a commit out
        async with asyncio.timeout(30):
            await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    server.kill()  # reap it
    assert server.returncode == -signal.SIGKILL
    return sent, acked


async def _fetch_all(port: int, keys: set[Key]) -> dict[Key, int]:
    conn = await WireClient.connect("127.0.0.1", port)
    try:
        out: dict[Key, int] = {}
        for group in sorted({group for group, _ in keys}):
            fetch = OffsetFetchRequest(
                version=7,
                group_id=group,
                topics=(OffsetFetchRequestTopic(name="t", partition_indexes=range(PARTITIONS)),),
            )
            response = from_kio_response(9, 7, await conn.call(to_kio_request(fetch)))
            assert isinstance(response, OffsetFetchResponse)
            for p in response.topics[0].partitions:
                out[(group, p.partition_index)] = p.committed_offset
        return out
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("shell", "seed"), [("asyncio", 1), ("asyncio", 2), ("native", 1), ("native", 2)]
)
def test_every_acknowledged_commit_survives_sigkill_under_concurrent_commits(
    tmp_path: Path, shell: str, seed: int
) -> None:
    rng = random.Random(seed)
    args = ("--port", "0", "--data-dir", str(tmp_path / "data"), "--topic", f"t:{PARTITIONS}")
    if shell == "native":
        args += ("--native-io", "--group-initial-rebalance-delay-ms", "0")
    else:
        args += ("--no-native-io",)
    for run in range(2):  # kill, restart on the same directory, kill again
        first = run * 10**7  # offsets grow across restarts
        # members join groups of their own, new ones each run (the last run's members
        # are still in theirs after the restart)
        members = f"r{run}m" if shell == "native" else None
        server = ServerProcess(args)
        try:
            sent, acked = asyncio.run(
                _commit_until_killed(server, first, rng.randrange(200, 2000), members)
            )
        finally:
            server.kill()
        assert len(acked) == CLIENTS
        restarted = ServerProcess(args)
        try:
            stored = asyncio.run(_fetch_all(restarted.port, set(acked)))
        finally:
            restarted.stop()
        for key, offset in acked.items():
            # acknowledged => durable; a commit whose answer the kill cut off may be there too
            assert offset <= stored[key] <= sent[key], (key, offset, stored[key], sent[key])
