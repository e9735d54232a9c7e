"""Run a real Apache Kafka broker (single-node KRaft, 127.0.0.1 only) from Maven Central jars.

Used by ``tools/kafka_groups.py`` (the broker-log fixtures of ``tests/pipeline/``), by
``tools/conformance_goldens.py`` (the golden responses of ``tests/conformance/``) and by the
``kafka_broker`` fixture of ``tests/conftest.py`` (tests marked ``kafka``); it also runs by
hand::

    python tools/kafka_broker.py --version 4.4.0 --dir /tmp/kafka-4.4.0
    # prints "kafka 4.4.0 listening on 127.0.0.1:PORT" and runs until Ctrl-C;
    # the broker's log is DIR/logs/server.log

The jars come from Maven Central through Maven (``mvn dependency:build-classpath`` on a small
generated pom), so they are cached in ``~/.m2`` between runs; nothing is copied into the
repository. Needs ``mvn`` and Java 17+. Logging is log4j2 with Kafka's own layout
(``[%d] %p %m (%c)%n``), the same lines a packaged broker writes to ``server.log``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

#: log4j2 binding for slf4j 1.7 (what kafka_2.13 3.9 and 4.x use) and its core
LOG4J_VERSION = "2.24.3"

POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>invalid.groupcoord</groupId>
  <artifactId>kafka-broker-classpath</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>{artifact}</artifactId>
      <version>{kafka}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{log4j}</version>
    </dependency>
  </dependencies>
</project>
"""

LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = INFO
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def classpath(version: str, artifact: str = "kafka_2.13") -> str:
    """The runtime classpath of ``org.apache.kafka:artifact:version`` (resolved by Maven,
    cached in ~/.m2), with log4j2 behind slf4j: by default the broker's, which holds the
    Java client (kafka-clients) of the same version too; ``kafka-tools`` is the command
    line tools (``kafka-consumer-groups``' ConsumerGroupCommand)."""
    name = f"kafka-{version}" if artifact == "kafka_2.13" else f"{artifact}-{version}"
    cache = Path.home() / ".cache" / "groupcoord" / name
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / "classpath.txt"
    if out.exists() and all(Path(p).exists() for p in out.read_text().split(os.pathsep)):
        return out.read_text().strip()
    pom = POM.format(artifact=artifact, kafka=version, log4j=LOG4J_VERSION)
    (cache / "pom.xml").write_text(pom)
    subprocess.run(
        [
            "mvn", "-q", "-B", "dependency:build-classpath",
            f"-Dmdep.outputFile={out}", "-Dmdep.includeScope=runtime",
        ],
        cwd=cache,
        check=True,
    )  # fmt: skip
    return out.read_text().strip()


#: the line KafkaRaftServer logs once the broker and controller are both up (the
#: SocketServer "Acceptors to be started" lines come earlier, from the controller alone)
STARTED_LINE = "Kafka Server started (kafka.server.KafkaRaftServer)"


class Broker:
    """A broker process on 127.0.0.1; ``start()`` formats ``directory`` and waits until the
    broker logs that it started; ``stop()`` shuts it down (SIGTERM, then SIGKILL).

    ``properties`` are added to (or override) the ``server.properties`` written by
    ``start()``, e.g. ``{"group.max.size": "3", "auto.create.topics.enable": "false"}``.
    """

    def __init__(
        self,
        version: str,
        directory: Path,
        *,
        initial_rebalance_delay_ms: int = 0,
        properties: Mapping[str, str] | None = None,
    ):
        self.version = version
        self.directory = directory
        self.port = free_port()
        self.controller_port = free_port()
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.properties = dict(properties or {})
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def server_log(self) -> Path:
        return self.directory / "logs" / "server.log"

    def _java(self, main: str, *args: str) -> list[str]:
        java = shutil.which("java") or "java"
        return [
            java, "-Xmx512m", "-Djava.net.preferIPv4Stack=true",
            f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.directory / 'logs'}",
            "-cp", classpath(self.version), main, *args,
        ]  # fmt: skip

    def start(self, timeout_s: float = 90) -> None:
        if self.directory.exists():
            shutil.rmtree(self.directory)
        (self.directory / "logs").mkdir(parents=True)
        (self.directory / "log4j2.properties").write_text(LOG4J2.format(log=self.server_log))
        props = self.directory / "server.properties"
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.directory / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": str(self.initial_rebalance_delay_ms),
            "group.min.session.timeout.ms": "3000",
            **self.properties,
        }
        props.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        kraft_cluster_id = cluster_id()
        subprocess.run(
            self._java(
                "kafka.tools.StorageTool",
                "format",
                f"--cluster-id={kraft_cluster_id}",
                "-c",
                str(props),
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        self.process = subprocess.Popen(
            self._java("kafka.Kafka", str(props)),
            stdout=(self.directory / "stdout.txt").open("wb"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"kafka exited with {self.process.returncode}; see {self.directory}"
                )
            if self.server_log.exists() and STARTED_LINE in self.server_log.read_text(
                errors="replace"
            ):
                return
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"kafka did not start within {timeout_s} s; see {self.server_log}")

    def wait_for_group_coordinator(self, timeout_s: float = 60) -> None:
        """Return once every partition of ``__consumer_offsets`` answers for its groups.

        A fresh broker creates ``__consumer_offsets`` on the first FindCoordinator and
        answers COORDINATOR_NOT_AVAILABLE until it exists, then NOT_COORDINATOR or
        COORDINATOR_LOAD_IN_PROGRESS for a group until that group's partition is loaded.
        Tests that record what the coordinator answers start after that: this sends
        FindCoordinator, then DescribeGroups for one group per partition, until none
        answers an error. Speaks the wire with groupcoord's codec (``PYTHONPATH=python``).
        """
        from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
        from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest

        partitions = int(self.properties.get("offsets.topic.num.partitions", "4"))
        probes = _one_group_per_partition(partitions)
        requests = [
            FindCoordinatorRequest(key=probes[0], key_type=0),
            DescribeGroupsRequest(groups=tuple(probes), include_authorized_operations=False),
        ]
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                found, described = self._ask(requests)
                errors = [found.error_code] + [g.error_code for g in described.groups]
                bad = sorted({e.name for e in errors if e != 0})
                if not bad:
                    return
                last = f"errors {bad}"
            except OSError as e:
                last = f"{type(e).__name__}: {e}"
            time.sleep(0.2)
        raise RuntimeError(
            f"kafka {self.version}: group coordinator still not ready after {timeout_s} s ({last})"
        )

    def _ask(self, requests: list[object]) -> list[Any]:
        from groupcoord.protocol.client import ClientCodec

        codec = ClientCodec(client_id="kafka-broker-probe")
        answers: list[Any] = []
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            for request in requests:
                sock.sendall(codec.encode(request)[1])
                received: list[Any] = []
                while not received:
                    data = sock.recv(65536)
                    if not data:
                        raise ConnectionError("closed by the broker")
                    received = codec.feed(data)
                answers.append(received[0].response)
        return answers

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def running_broker(version: str, directory: Path, topics: Mapping[str, int]) -> Iterator[Broker]:
    """A started broker whose group coordinator answers, with ``topics`` (name ->
    partitions, replication 1) created; stopped on exit."""
    from kafka.admin import KafkaAdminClient, NewTopic

    broker = Broker(version, directory)
    broker.start()
    try:
        broker.wait_for_group_coordinator()
        if topics:
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
            admin.create_topics([NewTopic(name, n, 1) for name, n in topics.items()])
            admin.close()
        yield broker
    finally:
        broker.stop()


def _java_string_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _one_group_per_partition(partitions: int) -> list[str]:
    """Group ids whose ``__consumer_offsets`` partitions (Kafka: ``Utils.abs(hashCode) %
    n``) cover all ``partitions``."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < partitions:
        name = f"kafka-broker-probe-{i}"
        found.setdefault((_java_string_hash(name) & 0x7FFFFFFF) % partitions, name)
        i += 1
    return [found[p] for p in sorted(found)]


def cluster_id(random_uuid: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A KRaft cluster id the way Kafka's ``Uuid.randomUuid`` makes one.

    URL-safe base64 of 16 random bytes, drawn again while it starts with "-": one id in
    64 does, and ``kafka-storage format -t -xyz`` then reads the id as a flag and fails
    with "argument --cluster-id/-t: expected one argument" (Kafka's own generator
    rejects such ids for the same reason).
    """
    import base64

    while True:
        text = base64.urlsafe_b64encode(random_uuid().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="4.4.0", help="kafka_2.13 version (Maven Central)")
    parser.add_argument("--dir", type=Path, required=True, help="broker directory (wiped)")
    args = parser.parse_args()
    broker = Broker(args.version, args.dir)
    broker.start()
    print(f"kafka {args.version} listening on {broker.bootstrap}", flush=True)
    try:
        assert broker.process is not None
        broker.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
