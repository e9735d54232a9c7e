"""One group, three client implementations: kafka-python with groupcoord's cooperative-sticky
(through the adapter), kafka-python with its own, and librdkafka (confluent-kafka) with its
own, all under the protocol name "cooperative-sticky". Whichever member leads decodes the
others' subscriptions (owned partitions, generation) and they decode its assignments."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import scenarios
from helpers import (
    FAST_GROUP_FLAGS,
    ConsumerGroup,
    Server,
    wait_owned_exactly_once,
    wait_until,
)


@pytest.fixture(params=["asyncio", "native-io"])
def server(serve_factory: Callable[..., Server], request: pytest.FixtureRequest) -> Server:
    # both shells: the asyncio connections, and the native one answering heartbeats itself
    shell = ("--native-io",) if request.param == "native-io" else ("--no-native-io",)
    return serve_factory(*scenarios.topic_flags(*FAST_GROUP_FLAGS, *shell))


def test_cooperative_group_of_three_client_implementations(server: Server, tmp_path: Path) -> None:
    with ConsumerGroup(
        "kafka-python", server.bootstrap, "mixed", [scenarios.TOPIC], tmp_path,
        assignor="gc-cooperative-sticky",
    ) as group:  # fmt: skip
        ours = group.spawn()
        theirs = group.spawn(assignor="cooperative-sticky")
        librdkafka = group.spawn(client="confluent", assignor="cooperative-sticky")
        members = [ours, theirs, librdkafka]
        wait_owned_exactly_once(
            members, scenarios.ALL, [4, 4, 4], scenarios.JOIN_TIMEOUT_S, "3 clients own 12"
        )
        wait_until(lambda: scenarios.quiet(members, 1.0), scenarios.REBALANCE_TIMEOUT_S, "settled")

        # the kafka-python member with its own assignor leaves; a second librdkafka joins
        theirs.close()
        wait_owned_exactly_once(
            [ours, librdkafka], scenarios.ALL, [6, 6], scenarios.REBALANCE_TIMEOUT_S, "2 own 12"
        )
        marks = {m.name: m.mark() for m in (ours, librdkafka)}
        before = {m.name: m.owned() for m in (ours, librdkafka)}
        newcomer = group.spawn(client="confluent", assignor="cooperative-sticky")
        wait_owned_exactly_once(
            [ours, librdkafka, newcomer], scenarios.ALL, [4, 4, 4],
            scenarios.JOIN_TIMEOUT_S, "3 own 12 again",
        )  # fmt: skip
        # cooperative on both sides: each old member gave up only what moved to the newcomer
        for m in (ours, librdkafka):
            revoked = frozenset().union(
                *(e.parts("removed") for e in m.events("revoked", since=marks[m.name]))
            )
            assert revoked == before[m.name] - m.owned(), (m.name, revoked)
            assert not m.events("lost", since=marks[m.name])
