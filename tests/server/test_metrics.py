"""``groupcoord serve --metrics-port 0``: a real kafka-python consumer group on the server,
its metrics scraped over HTTP and parsed with prometheus_client's parser; plus the
labels the counters sort events into."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError
from hypothesis import given
from hypothesis import strategies as st
from kafka import OffsetAndMetadata, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from groupcoord.coordinator import MemberRemoved, RemovalCause
from groupcoord.server.stats import LATENCY_BUCKETS_S, Histogram, rebalance_kind, removal_kind
from kafka_python_consumer import subscribed_consumer

READY = "groupcoord listening on "
METRICS = "metrics on http://"
START_TIMEOUT_S = 30.0

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class MetricsServe:
    """``groupcoord serve --metrics-port 0``: the ready line on stdout, the metrics
    address from the log on stderr (drained by a thread so the pipe never fills)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "groupcoord", "serve", "--port", "0", "--metrics-port", "0",
             *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.log: list[str] = []
        metrics_url = ""
        deadline = time.monotonic() + START_TIMEOUT_S
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stderr, selectors.EVENT_READ)
            while not metrics_url and time.monotonic() < deadline:
                if sel.select(timeout=0.2):
                    line = self.proc.stderr.readline()
                    if not line:
                        break
                    self.log.append(line)
                    if METRICS in line:
                        metrics_url = "http://" + line.split(METRICS, 1)[1].strip()
        ready = self.proc.stdout.readline() if metrics_url else ""
        if not ready.startswith(READY):
            self.proc.kill()
            raise AssertionError(f"not ready: {ready!r}; log: {''.join(self.log)}")
        self.bootstrap = ready[len(READY) :].strip()
        self.metrics_url = metrics_url
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()

    def _read_log(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)

    def scrape(self) -> Samples:
        with urllib.request.urlopen(self.metrics_url, timeout=10) as response:
            text = response.read().decode()
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=15)
        self._drain.join(timeout=5)
        return code


@pytest.fixture
def serve() -> Iterator[list[MetricsServe]]:
    started: list[MetricsServe] = []
    yield started
    for server in started:
        if server.proc.poll() is None:
            server.stop()


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


class Polling(threading.Thread):
    """A kafka-python consumer polling on its own thread, as an application's does; it
    commits what :meth:`commit` asks, between polls (a consumer is not thread-safe)."""

    def __init__(self, bootstrap: str, name: str) -> None:
        super().__init__(daemon=True)
        self.consumer = subscribed_consumer(
            ["orders"],
            bootstrap_servers=bootstrap,
            group_id="g",
            client_id=name,
            enable_auto_commit=False,
            session_timeout_ms=6_000,
            heartbeat_interval_ms=100,
            request_timeout_ms=15_000,
        )
        self.assigned: set[TopicPartition] = set()
        self._commit: dict[TopicPartition, OffsetAndMetadata] = {}
        self.committed = threading.Event()
        self._stopping = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                self.consumer.poll(timeout_ms=100)
                self.assigned = set(self.consumer.assignment())
                if self._commit:
                    self.consumer.commit(self._commit)
                    self._commit = {}
                    self.committed.set()
        finally:
            self.consumer.close()  # LeaveGroup

    def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        self._commit = offsets
        assert self.committed.wait(30)

    def close(self) -> None:
        self._stopping.set()
        self.join(30)


def wait_assigned(consumers: list[Polling], partitions: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if sum(len(c.assigned) for c in consumers) == partitions and all(
            c.assigned for c in consumers
        ):
            return
        time.sleep(0.05)
    raise AssertionError([c.assigned for c in consumers])


@pytest.mark.parametrize("shell", ["asyncio", "native-io"])
def test_a_consumer_group_moves_the_counters(serve: list[MetricsServe], shell: str) -> None:
    # the native shell answers most heartbeats on its own thread: they count all the same
    flags = ("--native-io",) if shell == "native-io" else ("--no-native-io",)
    server = MetricsServe(
        "--memory", "--topic", "orders:4", "--group-initial-rebalance-delay-ms", "0", *flags
    )
    serve.append(server)
    before = server.scrape()
    assert value(before, "groupcoord_heartbeats_total") == 0
    assert value(before, "groupcoord_connections") == 0
    first = Polling(server.bootstrap, "one")
    second = Polling(server.bootstrap, "two")
    try:
        wait_assigned([first, second], 4)
        first.commit({TopicPartition("orders", 0): OffsetAndMetadata(7, "", -1)})
        time.sleep(1.5)  # heartbeats 100 ms apart; native ones are counted every second
        stable = server.scrape()
        assert value(stable, "groupcoord_groups", type="classic", state="Stable") == 1
        assert value(stable, "groupcoord_group_members", type="classic") == 2
        assert value(stable, "groupcoord_heartbeats_total") > 0
        assert value(stable, "groupcoord_offset_commits_total") == 1
        # the first member's join and the second's (which rebalanced the first)
        assert value(stable, "groupcoord_rebalances_total", reason="member_joined") >= 2
        assert value(stable, "groupcoord_rebalance_duration_seconds_count") >= 2
        assert value(stable, "groupcoord_request_latency_seconds_count", api="join_group") >= 2
        assert value(stable, "groupcoord_request_latency_seconds_count", api="heartbeat") == (
            value(stable, "groupcoord_heartbeats_total")
        )
        assert value(
            stable, "groupcoord_request_latency_seconds_bucket", api="sync_group", le="+Inf"
        ) == value(stable, "groupcoord_request_latency_seconds_count", api="sync_group")
        assert value(stable, "groupcoord_bytes_received_total") > 0
        assert value(stable, "groupcoord_bytes_sent_total") > 0
        assert value(stable, "groupcoord_connections") >= 2
    finally:
        second.close()  # LeaveGroup: the first rejoins alone
    try:
        wait_assigned([first], 4)
    finally:
        first.close()
    after = server.scrape()
    assert value(after, "groupcoord_members_removed_total", cause="left") == 2
    assert value(after, "groupcoord_rebalances_total", reason="member_left") >= 1
    assert value(after, "groupcoord_groups", type="classic", state="Empty") == 1
    assert value(after, "groupcoord_group_members", type="classic") == 0
    assert server.stop() == 0


def test_failed_authentications_are_counted(serve: list[MetricsServe], tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    added = subprocess.run(
        [sys.executable, "-m", "groupcoord", "users", "add", "bob", "--password", "secret",
         "--mechanism", "PLAIN", "--data-dir", data],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    server = MetricsServe("--data-dir", data, "--listener", "SASL_PLAINTEXT://127.0.0.1:0",
                          "--sasl-mechanisms", "PLAIN")  # fmt: skip
    serve.append(server)
    errors: list[KafkaError] = []
    wrong = Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "bob",
            "sasl.password": "wrong",
            "group.id": "g",
            "error_cb": errors.append,
        }
    )
    try:
        wrong.subscribe(["orders"])
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            wrong.poll(0.2)
    finally:
        wrong.close()
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert value(server.scrape(), "groupcoord_authentication_failures_total") >= 1


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("new member consumer-1-abc; client reason: not provided", "member_joined"),
        ("member m-1: rejoin; need to re-join", "member_rejoined"),
        ("member m-1: metadata changed; x", "metadata_changed"),
        ("LeaveGroup; client reason: the consumer is being closed", "member_left"),
        ("heartbeat expiration", "session_timeout"),
        ("members ['m-2'] did not send SyncGroup in time", "sync_timeout"),
        ("static member m-3 (i-1) replaced; client reason: x", "static_member"),
        ("something new", "other"),
    ],
)
def test_rebalance_reasons_map_to_bounded_labels(reason: str, kind: str) -> None:
    assert rebalance_kind(reason) == kind


def test_a_leave_for_an_expired_poll_timer_is_a_poll_timeout() -> None:
    def removed(cause: RemovalCause, reason: str) -> MemberRemoved:
        return MemberRemoved(
            group_id="g", member_id="m", group_instance_id=None, cause=cause, reason=reason,
            at_ms=0,
        )  # fmt: skip

    poll = "LeaveGroup; client reason: consumer poll timeout has expired."
    assert removal_kind(removed(RemovalCause.LEFT, poll)) == "poll_timeout"
    assert removal_kind(removed(RemovalCause.LEFT, "LeaveGroup; client reason: x")) == "left"
    assert removal_kind(removed(RemovalCause.SESSION_TIMEOUT, "x")) == "session_timeout"


@given(st.lists(st.floats(min_value=0, max_value=1_000, allow_nan=False)))
def test_histogram_buckets_count_each_value_once_at_its_first_bound(values: list[float]) -> None:
    histogram = Histogram(LATENCY_BUCKETS_S)
    for v in values:
        histogram.observe(v)
    counts, total = histogram.snapshot()
    assert sum(counts) == len(values)
    assert total == pytest.approx(sum(values))
    bounds = [*LATENCY_BUCKETS_S, float("inf")]
    for i, bound in enumerate(bounds):
        assert sum(counts[: i + 1]) == sum(1 for v in values if v <= bound)
