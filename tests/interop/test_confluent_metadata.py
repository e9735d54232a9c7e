"""confluent-kafka 2.16 (librdkafka) asking ``groupcoord serve`` for every topic: the
admin client's and a consumer's ``list_topics()``, and a consumer's regex subscription.

librdkafka 2.16 sends its Metadata v13 "all topics" request with 3 stray bytes after the
body; Kafka reads the schema and ignores them, and so must we (we used to close the
connection, which failed both of these)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import scenarios
from helpers import FAST_GROUP_FLAGS, HERE, ConsumerGroup, Server, partitions, wait_until

#: topics the server starts with: two a regex subscription matches, one it does not
TOPICS = {"rx-alpha": 2, "rx-beta": 3, "other": 4}
REGEX = "^rx-.*"
LIST_TOPICS_TIMEOUT_S = 15


@pytest.fixture
def server(serve_factory: Callable[..., Server]) -> Server:
    flags = [f for name, count in TOPICS.items() for f in ("--topic", f"{name}:{count}")]
    return serve_factory(*flags, *FAST_GROUP_FLAGS)


def test_admin_and_consumer_list_topics_list_every_topic(server: Server) -> None:
    done = subprocess.run(
        [sys.executable, str(HERE / "confluent_list_topics.py"), server.bootstrap,
         str(LIST_TOPICS_TIMEOUT_S)],
        capture_output=True, text=True, timeout=LIST_TOPICS_TIMEOUT_S + 30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    listings = json.loads(done.stdout)
    expected = {"topics": TOPICS, "brokers": 1}
    assert listings == {"admin": expected, "consumer": expected}


def test_regex_subscription_gets_the_matching_topics_only(server: Server, tmp_path: Path) -> None:
    expected = partitions("rx-alpha", 2) | partitions("rx-beta", 3)
    with ConsumerGroup("confluent", server.bootstrap, "rx-group", [REGEX], tmp_path) as group:
        member = group.spawn()
        wait_until(
            lambda: member.owned() == expected,
            scenarios.JOIN_TIMEOUT_S,
            f"the {REGEX} subscriber to own {sorted(expected)}",
            lambda: f"owned: {sorted(member.owned())}\n{group.diagnostics()}",
        )
        # every assignment it got was of matching topics (never "other")
        for event in member.events("assigned"):
            assert all(topic.startswith("rx-") for topic, _ in event.parts("added")), event
        assert not member.errors()
