"""One consumer-group member for tools/kafka_groups.py (run as a child process).

``python tools/kafka_member.py BOOTSTRAP GROUP TOPIC NAME [--stall-after-s S]``
(kafka-python) joins GROUP, polls, and prints one JSON line per callback to stdout:
``{"ev": "synced", "gen": N}`` (a SyncGroup of generation N succeeded),
``{"ev": "assigned", "gen": N, ...}``, ``{"ev": "revoked"}``, ``{"ev": "closed"}``. SIGTERM
closes the consumer (an explicit LeaveGroup). ``--stall-after-s`` stops polling after S
seconds (the max.poll.interval.ms poll timeout: the client leaves the group by itself), then
exits without polling again.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("name")
    parser.add_argument("--stall-after-s", type=float, default=None)
    args = parser.parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    run_kafka_python(args, stop)


def run_kafka_python(args: argparse.Namespace, stop: list[bool]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.name,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=4000 if args.stall_after_s is not None else 300000,
        enable_auto_commit=False,
    )

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            emit(ev="revoked", name=args.name)

        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            gen = consumer._coordinator._generation
            emit(
                ev="assigned",
                name=args.name,
                gen=gen.generation_id,
                member_id=gen.member_id,
                partitions=len(assigned),
            )

    # every generation whose SyncGroup succeeded, even one the client supersedes by
    # rejoining at once (then on_partitions_assigned never runs for it)
    coordinator = consumer._coordinator
    on_join_complete = coordinator._on_join_complete_async

    async def joined(generation, member_id, protocol, assignment):  # type: ignore[no-untyped-def]
        emit(ev="synced", name=args.name, gen=generation, member_id=member_id)
        return await on_join_complete(generation, member_id, protocol, assignment)

    coordinator._on_join_complete_async = joined
    consumer.subscribe([args.topic], listener=Listener())
    started = time.monotonic()
    while not stop:
        consumer.poll(timeout_ms=200)
        if args.stall_after_s is not None and time.monotonic() - started > args.stall_after_s:
            emit(ev="stalling", name=args.name)
            time.sleep(12)  # past max.poll.interval.ms: the heartbeat thread leaves
            emit(ev="stalled_exit", name=args.name)
            os._exit(0)
    consumer.close()
    emit(ev="closed", name=args.name)


if __name__ == "__main__":
    main()
