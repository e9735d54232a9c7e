"""Settings of a group member, validated as Kafka's consumer validates its config.

Attribute names are the consumer settings in snake case (``session.timeout.ms`` ->
``session_timeout_ms``). Invalid values raise :class:`~groupcoord.config.ConfigError`
(a ``ValueError``) naming the setting. The rebalance timeout a member sends in JoinGroup is
``max_poll_interval_ms`` (KIP-62), so it is not a setting of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from groupcoord.assignors.base import Assignor, RebalanceProtocol
from groupcoord.config import INT32_MAX, ConfigError
from groupcoord.member.protocol_choice import choose_protocol

__all__ = ["SERVER_ASSIGNORS", "ConsumerMemberConfig", "MemberConfig"]

#: Kafka's legal group.instance.id characters and length (JoinGroupRequest.validateGroupInstanceId).
_INSTANCE_ID: Final = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def _positive_int32(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an int, got {type(value).__name__}")
    if not 1 <= value <= INT32_MAX:
        raise ConfigError(f"{name} must be in [1, {INT32_MAX}], got {value}")
    return value


def _check_group_and_topics(group_id: object, topics: object) -> tuple[str, ...]:
    """The subscription as the member keeps it (sorted, unique); ConfigError if invalid."""
    if not isinstance(group_id, str) or not group_id:
        raise ConfigError("group.id must be a non-empty str (group management needs one)")
    if isinstance(topics, (str, bytes)) or not isinstance(topics, Sequence):
        raise ConfigError("topics must be a sequence of topic names, not a single str")
    if not topics or any(not isinstance(t, str) or not t for t in topics):
        raise ConfigError("topics must be non-empty topic names")
    return tuple(sorted(set(topics)))


def _check_member_settings(retry_backoff_ms: object, group_instance_id: object) -> None:
    if isinstance(retry_backoff_ms, bool) or not isinstance(retry_backoff_ms, int):
        raise ConfigError("retry.backoff.ms must be an int")
    if not 0 <= retry_backoff_ms <= INT32_MAX:
        raise ConfigError(f"retry.backoff.ms must be >= 0, got {retry_backoff_ms}")
    if group_instance_id is not None and (
        not isinstance(group_instance_id, str) or _INSTANCE_ID.fullmatch(group_instance_id) is None
    ):
        raise ConfigError(
            f"group.instance.id {group_instance_id!r} is invalid: 1-249 characters of "
            "ASCII letters, digits, '.', '_' and '-'"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberConfig:
    """A member's settings (Kafka consumer defaults).

    ``assignors`` are groupcoord :class:`~groupcoord.assignors.Assignor` instances in
    preference order; the member follows the most advanced rebalance protocol all of them
    support (:attr:`rebalance_protocol`). ``max_versions`` caps the request versions the
    member writes (API key -> highest version), e.g. after ApiVersions negotiation.
    """

    group_id: str
    topics: Sequence[str]
    assignors: Sequence[Assignor]
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    group_instance_id: str | None = None
    client_id: str = "groupcoord"
    retry_backoff_ms: int = 100
    max_versions: Mapping[int, int] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", _check_group_and_topics(self.group_id, self.topics))
        assignors = tuple(self.assignors)
        for a in assignors:
            if not isinstance(a, Assignor):
                raise ConfigError(
                    f"assignors must be groupcoord Assignor instances, got {type(a).__name__}"
                )
        names = [a.name for a in assignors]
        if len(set(names)) != len(names):
            raise ConfigError(f"assignors lists a protocol twice: {names}")
        object.__setattr__(self, "assignors", assignors)
        choose_protocol(assignors)  # refuses assignors without a common protocol
        session = _positive_int32("session.timeout.ms", self.session_timeout_ms)
        heartbeat = _positive_int32("heartbeat.interval.ms", self.heartbeat_interval_ms)
        _positive_int32("max.poll.interval.ms", self.max_poll_interval_ms)
        if heartbeat >= session:
            raise ConfigError(
                f"heartbeat.interval.ms ({heartbeat}) must be lower than "
                f"session.timeout.ms ({session})"
            )
        _check_member_settings(self.retry_backoff_ms, self.group_instance_id)
        if not isinstance(self.client_id, str):
            raise ConfigError("client.id must be a str")
        object.__setattr__(self, "max_versions", _check_versions(self.max_versions))

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        """EAGER or COOPERATIVE, from the assignors (:func:`choose_protocol`)."""
        return choose_protocol(self.assignors)

    @property
    def rebalance_timeout_ms(self) -> int:
        """What JoinGroup carries as the rebalance timeout: max.poll.interval.ms (KIP-62)."""
        return self.max_poll_interval_ms

    @property
    def is_static(self) -> bool:
        """KIP-345: a member with a group.instance.id."""
        return self.group_instance_id is not None


def _check_versions(value: object) -> Mapping[int, int]:
    if not isinstance(value, Mapping):
        raise ConfigError("max_versions must be a mapping of API key to version")
    out: dict[int, int] = {}
    for key, version in value.items():
        for what, v in (("API key", key), ("version", version)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"max_versions: {what} must be an int >= 0, got {v!r}")
        out[key] = version
    return MappingProxyType(out)


#: Kafka's server-side assignors a KIP-848 member may name (``group.remote.assignor``).
SERVER_ASSIGNORS: Final = frozenset({"uniform", "range"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerMemberConfig:
    """A KIP-848 member's settings (``group.protocol=consumer``; Kafka consumer defaults).

    The coordinator decides the session timeout and the heartbeat interval
    (``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``) and
    runs the assignor: ``server_assignor`` (Kafka's ``group.remote.assignor``) names one of
    its assignors, ``None`` leaves the choice to it. ``rack_id`` is Kafka's ``client.rack``.
    """

    group_id: str
    topics: Sequence[str]
    max_poll_interval_ms: int = 300_000
    group_instance_id: str | None = None
    server_assignor: str | None = None
    rack_id: str | None = None
    client_id: str = "groupcoord"
    retry_backoff_ms: int = 100
    max_versions: Mapping[int, int] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", _check_group_and_topics(self.group_id, self.topics))
        _positive_int32("max.poll.interval.ms", self.max_poll_interval_ms)
        _check_member_settings(self.retry_backoff_ms, self.group_instance_id)
        assignor = self.server_assignor
        if assignor is not None and assignor not in SERVER_ASSIGNORS:
            raise ConfigError(
                f"group.remote.assignor {assignor!r} is not a server-side assignor "
                f"(one of {', '.join(sorted(SERVER_ASSIGNORS))}, or None for the coordinator's "
                "default)"
            )
        rack = self.rack_id
        if rack is not None and (not isinstance(rack, str) or not rack):
            raise ConfigError("client.rack must be a non-empty str or None")
        if not isinstance(self.client_id, str):
            raise ConfigError("client.id must be a str")
        object.__setattr__(self, "max_versions", _check_versions(self.max_versions))

    @property
    def is_static(self) -> bool:
        """KIP-345: a member with a group.instance.id."""
        return self.group_instance_id is not None
