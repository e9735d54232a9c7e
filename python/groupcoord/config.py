"""Kafka-named settings with validation.

:class:`CoordinatorConfig` holds the broker settings the classic group coordinator reads.
Attribute names are the Kafka names in snake case; :meth:`CoordinatorConfig.from_dict` takes
the Kafka names themselves (``{"group.min.session.timeout.ms": 6000}``), as a
``server.properties`` file or a CLI would spell them. Values may be ints or decimal strings
(properties files are text). Unknown names and invalid values raise :class:`ConfigError`
(a ``ValueError``) naming the setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import ClassVar, Final

from groupcoord.errors import GroupcoordError

__all__ = ["INT32_MAX", "ConfigError", "CoordinatorConfig"]

INT32_MAX: Final = 2**31 - 1


class ConfigError(GroupcoordError, ValueError):
    """A setting that is unknown, of the wrong type or out of range."""


def _as_int(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip(), 10)
        except ValueError:
            raise ConfigError(f"{name} must be an integer, got {value!r}") from None
    raise ConfigError(f"{name} must be an integer, got {type(value).__name__}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorConfig:
    """Broker settings of the group coordinator (Kafka defaults): classic groups, and the
    ``group.consumer.*`` settings of KIP-848 consumer groups.

    ``group_max_size`` defaults to Kafka's ``Integer.MAX_VALUE``: unbounded in practice.
    ``new_member_join_timeout_ms`` is not a Kafka setting but Kafka's hard-coded
    ``NewMemberJoinTimeoutMs`` (5 minutes): how long a member that has never completed a
    join phase may wait in one before it is dropped (KAFKA-7610).
    """

    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = INT32_MAX
    offset_metadata_max_bytes: int = 4_096
    # KIP-211: an Empty group's offsets go this long after it became Empty (a simple
    # consumer's: after their commit); checked every offsets.retention.check.interval.ms.
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    new_member_join_timeout_ms: int = 300_000
    # KIP-848 consumer groups: the coordinator, not the member, decides the session
    # timeout and the heartbeat interval; the min/max bounds constrain the defaults.
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_max_size: int = INT32_MAX

    #: Kafka setting name -> attribute name, for the settings Kafka has.
    KAFKA_NAMES: ClassVar[Mapping[str, str]] = {
        "group.min.session.timeout.ms": "group_min_session_timeout_ms",
        "group.max.session.timeout.ms": "group_max_session_timeout_ms",
        "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
        "group.max.size": "group_max_size",
        "offset.metadata.max.bytes": "offset_metadata_max_bytes",
        "offsets.retention.minutes": "offsets_retention_minutes",
        "offsets.retention.check.interval.ms": "offsets_retention_check_interval_ms",
        "group.consumer.session.timeout.ms": "group_consumer_session_timeout_ms",
        "group.consumer.min.session.timeout.ms": "group_consumer_min_session_timeout_ms",
        "group.consumer.max.session.timeout.ms": "group_consumer_max_session_timeout_ms",
        "group.consumer.heartbeat.interval.ms": "group_consumer_heartbeat_interval_ms",
        "group.consumer.min.heartbeat.interval.ms": "group_consumer_min_heartbeat_interval_ms",
        "group.consumer.max.heartbeat.interval.ms": "group_consumer_max_heartbeat_interval_ms",
        "group.consumer.max.size": "group_consumer_max_size",
    }

    def __post_init__(self) -> None:
        names = {attr: kafka for kafka, attr in self.KAFKA_NAMES.items()}
        for f in fields(self):
            label = names.get(f.name, f.name)
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{label} must be an int, got {type(value).__name__}")
            if not 0 <= value <= INT32_MAX:
                raise ConfigError(f"{label} must be in [0, {INT32_MAX}], got {value}")
        if self.group_max_size < 1:
            raise ConfigError(f"group.max.size must be at least 1, got {self.group_max_size}")
        for attr in ("offsets_retention_minutes", "offsets_retention_check_interval_ms"):
            if getattr(self, attr) < 1:  # Kafka's atLeast(1)
                label = names[attr]
                raise ConfigError(f"{label} must be at least 1, got {getattr(self, attr)}")
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ConfigError(
                "group.min.session.timeout.ms "
                f"({self.group_min_session_timeout_ms}) must not exceed "
                f"group.max.session.timeout.ms ({self.group_max_session_timeout_ms})"
            )
        if self.group_consumer_max_size < 1:
            raise ConfigError(
                f"group.consumer.max.size must be at least 1, got {self.group_consumer_max_size}"
            )
        self._check_bounded("session.timeout.ms")
        self._check_bounded("heartbeat.interval.ms")
        # Kafka's GroupCoordinatorConfig: a member must get several heartbeats in per session.
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ConfigError(
                "group.consumer.heartbeat.interval.ms "
                f"({self.group_consumer_heartbeat_interval_ms}) must be less than "
                f"group.consumer.session.timeout.ms ({self.group_consumer_session_timeout_ms})"
            )

    def _check_bounded(self, suffix: str) -> None:
        """``group.consumer.min.X <= group.consumer.X <= group.consumer.max.X``."""
        attr = "group_consumer_" + suffix.replace(".", "_")
        low, value, high = (
            getattr(self, attr.replace("group_consumer_", f"group_consumer_{b}"))
            for b in ("min_", "", "max_")
        )
        if not low <= value <= high:
            raise ConfigError(
                f"group.consumer.{suffix} ({value}) must be within "
                f"[group.consumer.min.{suffix} ({low}), group.consumer.max.{suffix} ({high})]"
            )

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @classmethod
    def from_dict(cls, settings: Mapping[str, object]) -> CoordinatorConfig:
        """Build from Kafka setting names; missing ones keep Kafka's defaults.

        ``new_member_join_timeout_ms`` (no Kafka name) is accepted under that name.
        """
        kwargs: dict[str, int] = {}
        for key, value in settings.items():
            if not isinstance(key, str):
                raise ConfigError(f"setting names must be str, got {type(key).__name__}")
            attr = cls.KAFKA_NAMES.get(key)
            if attr is None:
                if key == "new_member_join_timeout_ms":
                    attr = key
                else:
                    known = ", ".join(sorted(cls.KAFKA_NAMES))
                    raise ConfigError(f"unknown coordinator setting {key!r} (known: {known})")
            kwargs[attr] = _as_int(key, value)
        return cls(**kwargs)

    def to_dict(self) -> dict[str, int]:
        """The settings under their Kafka names (plus ``new_member_join_timeout_ms``)."""
        out = {kafka: int(getattr(self, attr)) for kafka, attr in self.KAFKA_NAMES.items()}
        out["new_member_join_timeout_ms"] = self.new_member_join_timeout_ms
        return out
