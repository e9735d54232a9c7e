"""Fixtures of the GroupMember runner tests: a ``groupcoord serve`` subprocess with short
group timeouts (override ``server`` in a module for other flags) and ``make_member``, which
builds members bootstrapped to it and closes every one at the end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from runner_helpers import SERVER_ARGS, TOPIC

from groupcoord.assignors import CooperativeStickyAssignor
from groupcoord.member import GroupMember


@pytest.fixture
def server(serve_factory: Callable[..., Any]) -> Any:
    return serve_factory(*SERVER_ARGS)


@pytest.fixture
def member_settings() -> dict[str, Any]:
    """What ``make_member`` gives every member (a test module may override it)."""
    return {
        "group_id": "g",
        "topics": [TOPIC],
        "assignors": [CooperativeStickyAssignor()],
        "session_timeout_ms": 1500,
        "heartbeat_interval_ms": 300,
        "max_poll_interval_ms": 6000,
        "request_timeout_ms": 5000,
    }


@pytest.fixture
def make_member(
    server: Any, member_settings: dict[str, Any]
) -> Iterator[Callable[..., GroupMember]]:
    """Builds members bootstrapped to the test server; every one is closed at the end."""
    made: list[GroupMember] = []

    def make(**overrides: Any) -> GroupMember:
        settings: dict[str, Any] = {"bootstrap_servers": server.bootstrap, **member_settings}
        settings.update(overrides)
        member = GroupMember(**settings)
        made.append(member)
        return member

    yield make
    for member in made:
        member.close(timeout_ms=3000)
