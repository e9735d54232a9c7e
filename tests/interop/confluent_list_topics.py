"""``list_topics()`` of confluent-kafka's (librdkafka's) AdminClient and of its Consumer:
each a Metadata request for every topic. Prints ``{"admin": LISTING, "consumer": LISTING}``
as one JSON line, a listing being ``{"topics": {name: partition count}, "brokers": count}``,
or exits 1 with the client's error on stderr.
Usage: ``python confluent_list_topics.py BOOTSTRAP TIMEOUT_S``."""

from __future__ import annotations

import json
import sys
from typing import Any

from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient


def listing(client: Any, timeout: float) -> dict[str, Any]:
    metadata = client.list_topics(timeout=timeout)
    topics = {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}
    return {"topics": topics, "brokers": len(metadata.brokers)}


def main() -> None:
    bootstrap, timeout = sys.argv[1], float(sys.argv[2])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "list-topics"})
    try:
        out = {"admin": listing(admin, timeout), "consumer": listing(consumer, timeout)}
    except KafkaException as exc:
        sys.exit(f"list_topics failed: {exc}")
    finally:
        consumer.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
