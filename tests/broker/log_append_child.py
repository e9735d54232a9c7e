"""Child process of the log SIGKILL durability test (not a test module).

Usage: ``python log_append_child.py DB_PATH RUN``

Appends to topic "t" (2 partitions) through TopicLog + SqliteLogStore forever, half the
batches from an idempotent producer. As soon as ``append`` returns, the batch is printed
(``partition base_offset value sequence``; sequence -1 for plain batches) and stdout is
flushed, so every printed line is an acknowledged produce. The parent kills the process at a
random moment and checks that every printed batch survived, byte for byte.
"""

from __future__ import annotations

import sys

from groupcoord.broker.log import TopicLog
from groupcoord.storage.log_store import SqliteLogStore
from log_batches import build_batch


def batch_for(run: int, i: int, sequence: int, producer_id: int) -> tuple[bytes, bytes]:
    value = f"run{run}-rec{i}".encode()
    if sequence < 0:
        return value, build_batch([(None, value)])
    return value, build_batch(
        [(None, value)], producer_id=producer_id, producer_epoch=0, base_sequence=sequence
    )


def main() -> None:
    path, run = sys.argv[1], int(sys.argv[2])
    log = TopicLog(SqliteLogStore(path))
    if log.topic("t") is None:
        log.create_topic("t", 2)
    producer_id, _ = log.init_producer_id()
    print(f"producer {producer_id}", flush=True)
    sequence = 0
    i = 0
    while True:
        partition = i % 2
        seq = sequence if partition == 1 else -1
        value, batch = batch_for(run, i, seq, producer_id)
        result = log.append("t", partition, batch)
        print(f"{partition} {result.base_offset} {value.decode()} {seq}", flush=True)
        if partition == 1:
            sequence += 1
        i += 1


if __name__ == "__main__":
    main()
