"""Connection limits over real sockets: ``max_connections``, ``max_connections_per_ip``,
``connections_max_idle_ms``, and the bound on what a client that never reads its replies
can make the server hold. In every case a well-behaved client keeps being answered."""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1
from kio.schema.metadata.v1.request import MetadataRequestTopic
from kio.schema.types import TopicName
from server_harness import run_scenario
from wire_client import WireClient, pipeline_without_reading

from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator import JoinGroupRequest
from groupcoord.protocol.group_messages import to_kio_request
from groupcoord.server import Server, ServerConfig
from serve_process import ServerProcess
from tls_certs import make_certs
from waiting import wait_until_async as wait_until


async def answers(server: Server, client: WireClient | None = None) -> None:
    """ApiVersions and Metadata round trips on ``client`` (a new connection if None)."""
    own = client is None
    if client is None:
        client = await WireClient.connect("127.0.0.1", server.port)
    versions = await client.call(ApiVersionsV0())
    assert versions.error_code == 0
    metadata = await client.call(MetadataV1(topics=None))
    assert [b.port for b in metadata.brokers] == [server.port]
    if own:
        await client.close()


def test_connections_beyond_max_connections_are_closed_at_accept() -> None:
    async def scenario(server: Server) -> None:
        kept = [await WireClient.connect("127.0.0.1", server.port) for _ in range(4)]
        for client in kept:
            await answers(server, client)
        # a flood: 50 more connections, each closed by the server without an answer
        flood = [await WireClient.connect("127.0.0.1", server.port) for _ in range(50)]
        for client in flood:
            await client.send(ApiVersionsV0())
        for client in flood:
            assert await client.closed_by_server()
            await client.close()
        assert server.connections == 4
        for client in kept:  # the ones within the limit are still served
            await answers(server, client)
        # a slot freed is a slot a new client gets
        await kept.pop().close()
        await wait_until(lambda: server.connections == 3)
        await answers(server)
        for client in kept:
            await client.close()

    run_scenario(scenario, max_connections=4)


def test_max_connections_per_ip_leaves_other_addresses_served() -> None:
    async def connect_from(address: str, port: int) -> WireClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))
        return WireClient(reader, writer)

    async def scenario(server: Server) -> None:
        mine = [await connect_from("127.0.0.2", server.port) for _ in range(2)]
        for client in mine:
            await answers(server, client)
        extra = await connect_from("127.0.0.2", server.port)
        await extra.send(ApiVersionsV0())
        assert await extra.closed_by_server()
        assert server.per_ip_connections == {"127.0.0.2": 2}
        # another address is not held back by 127.0.0.2's connections
        await answers(server)
        for client in mine:
            await client.close()

    run_scenario(scenario, max_connections_per_ip=2)


def test_limits_count_the_connections_of_every_listener_of_both_shells(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One table for the whole server, as Kafka's: a client's connections to the native
    shell's PLAINTEXT listener and to the asyncio shell's SSL listener add up."""
    certs = make_certs(tmp_path)
    tls = ssl.create_default_context(cafile=str(certs / "ca.pem"))

    async def connect(server: Server, protocol: str) -> WireClient:
        (endpoint,) = [e for e in server.endpoints if e.protocol == protocol]
        context = tls if protocol == "SSL" else None
        reader, writer = await asyncio.open_connection("127.0.0.1", endpoint.port, ssl=context)
        return WireClient(reader, writer)

    async def served(client: WireClient) -> bool:
        try:
            return (await client.call(ApiVersionsV0())).error_code == 0
        except (EOFError, ConnectionError, OSError):
            return False

    async def scenario(server: Server) -> None:
        assert server.native_listeners, "the PLAINTEXT listener is on the native shell"
        native = await connect(server, "PLAINTEXT")
        over_tls = await connect(server, "SSL")
        assert await served(native) and await served(over_tls)
        assert server.per_ip_connections == {"127.0.0.1": 2}
        # a third from the same address is refused on either listener
        for protocol in ("PLAINTEXT", "SSL"):
            extra = await connect(server, protocol)
            assert not await served(extra), protocol
            await extra.close()
        assert server.per_ip_connections == {"127.0.0.1": 2}
        (listener,) = server.native_listeners
        assert listener.counters()["refused_per_ip"] == 1
        # logged, as the asyncio listener's refusals are (the counters are read each second)
        await wait_until(lambda: "on the native listener" in caplog.text)
        assert "refused 1 connection(s) on the native listener" in caplog.text
        assert "max.connections.per.ip reached" in caplog.text
        # the native connection's slot, once closed, is one the asyncio listener can use
        await native.close()
        await wait_until(lambda: server.per_ip_connections == {"127.0.0.1": 1})
        again = await connect(server, "SSL")
        assert await served(again) and await served(over_tls)
        for client in (over_tls, again):
            await client.close()
        await wait_until(lambda: server.per_ip_connections == {})

    run_scenario(
        scenario,
        listeners=("PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0"),
        ssl_certfile=str(certs / "server.pem"),
        ssl_keyfile=str(certs / "server.key"),
        native_io=True,
        max_connections_per_ip=2,
    )


def test_a_connection_with_no_request_for_the_idle_timeout_is_closed() -> None:
    idle_ms = 300

    async def scenario(server: Server) -> None:
        quiet = await WireClient.connect("127.0.0.1", server.port)
        await answers(server, quiet)
        last_request = time.monotonic()
        busy = await WireClient.connect("127.0.0.1", server.port)
        # a client that asks every 100 ms (a third of the timeout) is never idle
        closed_quiet = asyncio.ensure_future(quiet.closed_by_server())
        while not closed_quiet.done():
            await answers(server, busy)
            await asyncio.sleep(0.1)
        waited = time.monotonic() - last_request
        assert idle_ms / 1000 <= waited < 5 * idle_ms / 1000
        await answers(server, busy)
        assert server.connections == 1
        await quiet.close()
        await busy.close()

    run_scenario(scenario, connections_max_idle_ms=idle_ms)


def test_a_parked_join_group_is_not_idle() -> None:
    """A JoinGroup waiting out the initial rebalance delay (longer than the idle timeout)
    gets its answer; the connection is closed once idle after that."""

    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        join = JoinGroupRequest(
            version=3,
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=(("range", b""),),
        )
        started = time.monotonic()
        response = await client.call(to_kio_request(join))
        assert response.error_code == 0
        assert time.monotonic() - started >= 0.8  # it was parked the whole delay
        assert await client.closed_by_server()
        await client.close()

    run_scenario(
        scenario,
        connections_max_idle_ms=200,
        coordinator=CoordinatorConfig(group_initial_rebalance_delay_ms=800),
    )


def test_a_client_that_never_reads_holds_bounded_memory_and_blocks_nobody() -> None:
    """On the asyncio shell, whose connections say what they buffer (the native shell's
    own case is test_native_listener's test of the same name, by its counters)."""
    budget = 64 * 1024
    # replies of ~20 KB (a topic of 1,000 partitions): the 1,024 queued replies a
    # connection may hold (MAX_QUEUED_REPLIES) would be 20 MB without the byte budget
    requests = 2_000

    async def scenario(server: Server) -> None:
        big = MetadataV1(topics=(MetadataRequestTopic(name=TopicName("big")),))
        writer = await pipeline_without_reading(server.port, big, requests)
        await wait_until(lambda: server.connections == 1)
        (held,) = server.open_connections
        peak = 0
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            # others are answered all along
            await answers(server)
            peak = max(peak, held.buffered_bytes)
        # the budget, plus at most one reply over it and one batch the writer holds
        assert budget // 2 < peak <= 2 * budget
        # the write timeout closes it; what it had not taken is dropped
        await wait_until(lambda: held not in server.open_connections)
        await answers(server)
        writer.transport.abort()

    run_scenario(
        scenario,
        topics=(("big", 1_000),),
        max_buffered_bytes_per_connection=budget,
        connections_write_timeout_ms=2_000,
        native_io=False,
    )


def test_the_cli_flags_reach_the_server(serve_factory: Callable[..., ServerProcess]) -> None:
    server = serve_factory("--max-connections", "1", "--connections-max-idle-ms", "300")

    async def scenario() -> None:
        first = await WireClient.connect(server.host, server.port)
        assert (await first.call(ApiVersionsV0())).error_code == 0
        second = await WireClient.connect(server.host, server.port)
        await second.send(ApiVersionsV0())
        assert await second.closed_by_server()  # max.connections
        assert await first.closed_by_server(timeout_s=5)  # connections.max.idle.ms
        await first.close()
        await second.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_connections": 0}, "max-connections must be positive"),
        ({"max_connections_per_ip": -1}, "max-connections-per-ip must be positive"),
        ({"connections_max_idle_ms": 0}, "connections-max-idle-ms must be positive"),
        ({"max_buffered_bytes_per_connection": 0}, "max buffered bytes per connection"),
        ({"connections_write_timeout_ms": 0}, "write timeout must be positive"),
        ({"metrics_port": 70_000}, "metrics port must be in [0, 65535]"),
    ],
)
def test_bad_limit_settings(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ServerConfig(data_dir=None, **settings)
