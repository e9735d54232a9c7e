"""What the member does about each Kafka error, per API: one table, as data.

Kafka's ``AbstractCoordinator`` / ``ConsumerCoordinator`` response handlers each triage the
error they get (find the coordinator again, reset the membership, rejoin, fail, retry); the
member's handlers look the error up here instead and act on the :class:`ErrorAction`.

Each API's rules are a few named groups of errors, each with its action, and what every other
error gets (by Kafka's retriable marking). :data:`ERROR_ACTIONS` spells the rules out for
every error code (every API maps every code to exactly one action); :func:`action_for` also
answers for error classes without a code of their own (subclasses, client errors).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from groupcoord.errors import (
    BY_CODE,
    BrokerNotAvailableError,
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    KafkaError,
    MemberIdRequiredError,
    NetworkException,
    NotCoordinatorError,
    RebalanceInProgressError,
    RequestTimedOutError,
    UnknownMemberIdError,
    UnsupportedVersionError,
)

__all__ = [
    "API_RULES",
    "COMMIT_PRECEDENCE",
    "COORDINATOR_ERRORS",
    "ERROR_ACTIONS",
    "JOIN_FATAL_ERRORS",
    "MEMBERSHIP_ERRORS",
    "ApiRules",
    "ErrorAction",
    "action_for",
    "commit_action",
    "is_coordinator_error",
]


class ErrorAction(enum.Enum):
    #: the coordinator is gone, moved or unreachable: look it up again; requests that still
    #: matter are sent again once it is found
    REDISCOVER = "rediscover"
    #: our membership is no longer valid: forget generation and member id (partitions lost)
    #: and rejoin
    RESET_MEMBER = "reset_member"
    #: the group is rebalancing: (re)join it
    REJOIN = "rejoin"
    #: KIP-394: the coordinator gave us a member id; join again with it at once
    ADOPT_MEMBER_ID = "adopt_member_id"
    #: retrying cannot help (Kafka raises it from poll()): the member fails
    FATAL = "fatal"
    #: try again after retry.backoff.ms
    RETRY = "retry"
    #: the caller's request fails (a commit or fetch handle); the membership is unaffected
    FAIL = "fail"
    #: nothing to do (a LeaveGroup's answer: the member has left either way)
    IGNORE = "ignore"


_A = ErrorAction

#: The coordinator is gone, moved, or the connection to it failed.
COORDINATOR_ERRORS: Final[frozenset[type[KafkaError]]] = frozenset(
    {
        CoordinatorNotAvailableError,
        NotCoordinatorError,
        NetworkException,
        RequestTimedOutError,
        BrokerNotAvailableError,
    }
)
#: Our membership is no longer valid.
MEMBERSHIP_ERRORS: Final[frozenset[type[KafkaError]]] = frozenset(
    {UnknownMemberIdError, IllegalGenerationError}
)
#: Join/sync errors that retrying cannot fix.
JOIN_FATAL_ERRORS: Final[frozenset[type[KafkaError]]] = frozenset(
    {
        FencedInstanceIdError,
        GroupAuthorizationFailedError,
        InvalidSessionTimeoutError,
        InconsistentGroupProtocolError,
        GroupMaxSizeReachedError,
        InvalidGroupIdError,
        UnsupportedVersionError,
    }
)
_REBALANCING: Final[frozenset[type[KafkaError]]] = frozenset({RebalanceInProgressError})
_FENCED: Final[frozenset[type[KafkaError]]] = frozenset({FencedInstanceIdError})


@dataclass(frozen=True, slots=True)
class ApiRules:
    """One API's rules: named groups of errors with their action (disjoint), then the
    action of any other error, by whether Kafka marks it retriable."""

    groups: tuple[tuple[frozenset[type[KafkaError]], ErrorAction], ...]
    retriable: ErrorAction
    other: ErrorAction

    def named(self) -> dict[type[KafkaError], ErrorAction]:
        """The named errors and their actions; a group overlapping another is an error."""
        out: dict[type[KafkaError], ErrorAction] = {}
        for errors, action in self.groups:
            for error in errors:
                if error in out:
                    raise ValueError(f"{error.__name__} is named twice ({out[error]}, {action})")
                out[error] = action
        return out


#: API (its request class) -> its rules.
API_RULES: Final[Mapping[type[AnyRequest], ApiRules]] = MappingProxyType(
    {
        JoinGroupRequest: ApiRules(
            groups=(
                (frozenset({MemberIdRequiredError}), _A.ADOPT_MEMBER_ID),
                (MEMBERSHIP_ERRORS, _A.RESET_MEMBER),
                (COORDINATOR_ERRORS, _A.REDISCOVER),
                # a JoinGroup answered this has not joined: try again after the backoff
                (_REBALANCING, _A.RETRY),
                (JOIN_FATAL_ERRORS, _A.FATAL),
            ),
            retriable=_A.RETRY,
            other=_A.RETRY,
        ),
        SyncGroupRequest: ApiRules(
            groups=(
                (_REBALANCING, _A.REJOIN),
                (MEMBERSHIP_ERRORS, _A.RESET_MEMBER),
                (COORDINATOR_ERRORS, _A.REDISCOVER),
                (JOIN_FATAL_ERRORS, _A.FATAL),
            ),
            retriable=_A.RETRY,
            other=_A.RETRY,
        ),
        HeartbeatRequest: ApiRules(
            groups=(
                (_REBALANCING, _A.REJOIN),
                (MEMBERSHIP_ERRORS, _A.RESET_MEMBER),
                # Kafka's heartbeat thread fails and poll() throws the exception
                (_FENCED | {GroupAuthorizationFailedError}, _A.FATAL),
                (COORDINATOR_ERRORS, _A.REDISCOVER),
            ),
            retriable=_A.RETRY,
            other=_A.RETRY,
        ),
        OffsetCommitRequest: ApiRules(
            groups=(
                (_FENCED, _A.FATAL),
                # sent again once a newer generation is stable
                (_REBALANCING, _A.REJOIN),
                (COORDINATOR_ERRORS, _A.REDISCOVER),
                (MEMBERSHIP_ERRORS, _A.RESET_MEMBER),
            ),
            retriable=_A.RETRY,
            other=_A.FAIL,
        ),
        OffsetFetchRequest: ApiRules(
            groups=((COORDINATOR_ERRORS, _A.REDISCOVER),),
            retriable=_A.RETRY,
            other=_A.FAIL,
        ),
        LeaveGroupRequest: ApiRules(groups=(), retriable=_A.IGNORE, other=_A.IGNORE),
    }
)

#: An OffsetCommit answer carries an error per partition: the response takes the first of
#: these actions that any of its partitions has (fenced before anything; a rebalance before
#: a coordinator move, since the commit must wait for the new generation either way; it is
#: retried only if every error is retriable).
COMMIT_PRECEDENCE: Final[tuple[ErrorAction, ...]] = (
    _A.FATAL,
    _A.REJOIN,
    _A.REDISCOVER,
    _A.RESET_MEMBER,
    _A.FAIL,
    _A.RETRY,
)


def _classify(
    rules: ApiRules, named: Mapping[type[KafkaError], ErrorAction], error: type[KafkaError]
) -> ErrorAction:
    for cls in error.__mro__:  # a subclass acts as the error it refines
        action = named.get(cls)
        if action is not None:
            return action
    return rules.retriable if error.retriable else rules.other


def _spell_out() -> dict[type[AnyRequest], Mapping[type[KafkaError], ErrorAction]]:
    table: dict[type[AnyRequest], Mapping[type[KafkaError], ErrorAction]] = {}
    for api, rules in API_RULES.items():
        named = rules.named()
        table[api] = MappingProxyType(
            {error: _classify(rules, named, error) for error in BY_CODE.values()}
        )
    return table


#: API -> every Kafka error class with a code -> the one action the member takes.
ERROR_ACTIONS: Final[Mapping[type[AnyRequest], Mapping[type[KafkaError], ErrorAction]]] = (
    MappingProxyType(_spell_out())
)


def action_for(api: type[AnyRequest], error: type[KafkaError]) -> ErrorAction:
    """What to do about ``error`` answering a request of type ``api``."""
    action = ERROR_ACTIONS[api].get(error)
    if action is None:  # no code of its own: classified as the error it derives from
        rules = API_RULES[api]
        action = _classify(rules, rules.named(), error)
    return action


def commit_action(errors: Iterable[type[KafkaError]]) -> ErrorAction:
    """The action of an OffsetCommit answer whose partitions carry ``errors`` (at least
    one): the first of :data:`COMMIT_PRECEDENCE` that any of them maps to."""
    actions = {action_for(OffsetCommitRequest, error) for error in errors}
    for action in COMMIT_PRECEDENCE:
        if action in actions:
            return action
    raise ValueError("an OffsetCommit answer without errors has no error action")


def is_coordinator_error(error: type[KafkaError]) -> bool:
    """Whether ``error`` says the coordinator is gone, moved or unreachable (whatever the
    API: a request that got no answer for such a reason is sent again once it is found)."""
    return any(cls in COORDINATOR_ERRORS for cls in error.__mro__)
