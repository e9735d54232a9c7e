"""groupcoord: Kafka consumer-group coordination for Python, with its hot path in Rust."""

from groupcoord._core import JOIN, SESSION, SYNC, Expired, MemberExpiry, TimerWheel

__all__ = ["JOIN", "SESSION", "SYNC", "Expired", "MemberExpiry", "TimerWheel"]
