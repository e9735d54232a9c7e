"""pytest-benchmark: what ``--metrics-port`` costs the server (issue 15: metrics must not
slow the hot path).

``test_bench_wire_heartbeats_metrics``: ``bench_wire``'s heartbeat load (5,000 members
over 50 connections with ``--benchmark-only`` / ``GROUPCOORD_BENCH_SCALE=full``; a smoke
size otherwise) against ``groupcoord serve --memory`` without metrics, then with
``--metrics-port 0`` (every request's latency, bytes in and out counted), in the same run:
heartbeats per server CPU-second and the p99.
"""

from __future__ import annotations

import json
from typing import Any

from bench_wire import _full, bench_server, load_generator


def test_bench_wire_heartbeats_metrics(benchmark: Any, request: Any) -> None:
    full = _full(request.config)
    args = {
        "members": 5000 if full else 200,
        "connections": 50 if full else 10,
        "group_size": 50 if full else 10,
        "seconds": 10.0 if full else 1.0,
    }
    results: dict[str, dict[str, Any]] = {}
    runs: dict[str, tuple[str, ...]] = {
        "no metrics": (),
        "--metrics-port": ("--metrics-port", "0"),
    }
    for label, extra in runs.items():
        with (
            bench_server(("--memory",), extra) as server,
            load_generator("heartbeat", args | {"host": server.host, "port": server.port}) as gen,
        ):
            assert gen.stdin is not None and gen.stdout is not None
            cpu_before = server.cpu_seconds()

            def run() -> dict[str, Any]:
                assert gen.stdin is not None and gen.stdout is not None
                gen.stdin.write("go\n")
                gen.stdin.flush()
                return dict(json.loads(gen.stdout.readline()))

            result = run() if results else benchmark.pedantic(run, rounds=1, iterations=1)
            cpu = server.cpu_seconds() - cpu_before
        assert result["errors"] == 0, (label, result)
        result["per_cpu"] = result["answered_total"] / cpu if cpu > 0 else float("nan")
        results[label] = result
    benchmark.extra_info.update(
        {k: {"per_server_cpu_s": v["per_cpu"], "p99_ms": v["p99_ms"]} for k, v in results.items()}
    )
    base, metered = results["no metrics"], results["--metrics-port"]
    print(
        f"\nwire heartbeats, {args['members']} members: no metrics "
        f"{base['per_cpu']:,.0f} per server CPU-s (p99 {base['p99_ms']:.1f} ms); "
        f"--metrics-port {metered['per_cpu']:,.0f} (p99 {metered['p99_ms']:.1f} ms): "
        f"ratio {metered['per_cpu'] / base['per_cpu']:.2f}"
    )
