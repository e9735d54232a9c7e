"""The member's error -> action table (``member.error_actions``).

Checked as data (every API maps every Kafka error code to exactly one action; the named
groups of an API never overlap), against the triage ladders the handlers carried before the
table (kept here as the reference, as they were written in commit 01eaa24), and in the
machine: a stable member's heartbeat answered with any error code does what the table says.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from member_harness import Cluster, member_config

from groupcoord.assignors import CooperativeStickyAssignor
from groupcoord.coordinator.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from groupcoord.errors import (
    BY_CODE,
    BrokerNotAvailableError,
    CommitFailedError,
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
from groupcoord.member import MemberMachine, MemberState
from groupcoord.member.error_actions import (
    API_RULES,
    COMMIT_PRECEDENCE,
    ERROR_ACTIONS,
    ApiRules,
    ErrorAction,
    action_for,
    commit_action,
    is_coordinator_error,
)

A = ErrorAction
ERRORS = st.sampled_from(sorted(BY_CODE.values(), key=lambda e: e.code))

# ----------------------------------------------------------- the ladders before the table

_COORDINATOR = (
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    NetworkException,
    RequestTimedOutError,
    BrokerNotAvailableError,
)
_RESET = (UnknownMemberIdError, IllegalGenerationError)
_FATAL = (
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    InvalidSessionTimeoutError,
    InconsistentGroupProtocolError,
    GroupMaxSizeReachedError,
    InvalidGroupIdError,
    UnsupportedVersionError,
)


def _join(error: type[KafkaError]) -> ErrorAction:
    if error is MemberIdRequiredError:
        return A.ADOPT_MEMBER_ID
    if issubclass(error, _RESET):
        return A.RESET_MEMBER
    if issubclass(error, _COORDINATOR):
        return A.REDISCOVER
    if error is RebalanceInProgressError or error.retriable:
        return A.RETRY
    if issubclass(error, _FATAL):
        return A.FATAL
    return A.RETRY


def _sync(error: type[KafkaError]) -> ErrorAction:
    if error is RebalanceInProgressError:
        return A.REJOIN
    if issubclass(error, _RESET):
        return A.RESET_MEMBER
    if issubclass(error, _COORDINATOR):
        return A.REDISCOVER
    if issubclass(error, _FATAL):
        return A.FATAL
    return A.RETRY


def _heartbeat(error: type[KafkaError]) -> ErrorAction:
    if error is RebalanceInProgressError:
        return A.REJOIN
    if issubclass(error, _RESET):
        return A.RESET_MEMBER
    # GROUP_AUTHORIZATION_FAILED: fatal since the server has ACLs (Kafka's heartbeat thread
    # fails and poll() throws GroupAuthorizationException); the ladders retried it
    if error in (FencedInstanceIdError, GroupAuthorizationFailedError):
        return A.FATAL
    if issubclass(error, _COORDINATOR):
        return A.REDISCOVER
    return A.RETRY


def _commit(kinds: set[type[KafkaError]]) -> ErrorAction:
    if FencedInstanceIdError in kinds:
        return A.FATAL
    if RebalanceInProgressError in kinds:
        return A.REJOIN
    if any(issubclass(k, _COORDINATOR) for k in kinds):
        return A.REDISCOVER
    if any(issubclass(k, _RESET) for k in kinds):
        return A.RESET_MEMBER
    if all(k.retriable for k in kinds):
        return A.RETRY
    return A.FAIL


def _fetch(error: type[KafkaError]) -> ErrorAction:
    if issubclass(error, _COORDINATOR):
        return A.REDISCOVER
    if error.retriable:
        return A.RETRY
    return A.FAIL


LADDERS: dict[type, Callable[[type[KafkaError]], ErrorAction]] = {
    JoinGroupRequest: _join,
    SyncGroupRequest: _sync,
    HeartbeatRequest: _heartbeat,
    OffsetCommitRequest: lambda e: _commit({e}),
    OffsetFetchRequest: _fetch,
    LeaveGroupRequest: lambda _e: A.IGNORE,  # logged and ignored, whatever the error
}

# ------------------------------------------------------------------------------ as data


def test_every_api_maps_every_error_code_to_exactly_one_action() -> None:
    assert set(ERROR_ACTIONS) == set(API_RULES) == set(LADDERS)
    codes = set(BY_CODE.values())
    for api, table in ERROR_ACTIONS.items():
        assert set(table) == codes, api.__name__
        assert all(isinstance(action, ErrorAction) for action in table.values())
        # the named groups of an API are disjoint (named() raises otherwise)
        named = API_RULES[api].named()
        assert sum(len(group) for group, _ in API_RULES[api].groups) == len(named)
        assert set(named) <= codes


def test_overlapping_groups_are_refused() -> None:
    rules = ApiRules(
        groups=(
            (frozenset({NotCoordinatorError}), A.REDISCOVER),
            (frozenset({NotCoordinatorError}), A.RETRY),
        ),
        retriable=A.RETRY,
        other=A.FAIL,
    )
    with pytest.raises(ValueError, match="NotCoordinatorError"):
        rules.named()


@settings(max_examples=400)
@given(api=st.sampled_from(sorted(LADDERS, key=lambda a: a.__name__)), error=ERRORS)
def test_the_table_answers_as_the_ladders_did(api: type, error: type[KafkaError]) -> None:
    assert action_for(api, error) is ERROR_ACTIONS[api][error] is LADDERS[api](error)


def test_every_error_code_of_every_api_as_the_ladders_did() -> None:
    """Exhaustively, besides the sampled test above (the table is small)."""
    for api, ladder in LADDERS.items():
        for error in BY_CODE.values():
            assert ERROR_ACTIONS[api][error] is ladder(error), (api.__name__, error.name)


@given(kinds=st.sets(ERRORS, min_size=1, max_size=5))
def test_a_commit_answer_with_several_errors_acts_as_the_ladder_did(
    kinds: set[type[KafkaError]],
) -> None:
    action = commit_action(kinds)
    assert action is _commit(kinds)
    assert action is min(
        (action_for(OffsetCommitRequest, k) for k in kinds), key=COMMIT_PRECEDENCE.index
    )


def test_a_commit_answer_without_errors_has_no_action() -> None:
    with pytest.raises(ValueError):
        commit_action(())


def test_errors_without_a_code_are_classified_as_what_they_refine() -> None:
    class MovedAgain(NotCoordinatorError):
        pass

    for api in API_RULES:
        assert action_for(api, MovedAgain) is action_for(api, NotCoordinatorError)
        # a client error (no code, not retriable) takes the API's rule for other errors
        assert action_for(api, CommitFailedError) is API_RULES[api].other
    assert is_coordinator_error(MovedAgain)
    assert not is_coordinator_error(CommitFailedError)


@given(error=ERRORS)
def test_transport_failures_rediscover_exactly_for_coordinator_errors(
    error: type[KafkaError],
) -> None:
    assert is_coordinator_error(error) == issubclass(error, _COORDINATOR)


# ---------------------------------------------------------------------------- in the machine


def _stable() -> tuple[Cluster, MemberMachine]:
    cluster = Cluster({"t": 4})
    member = cluster.add("a", member_config(["t"], [CooperativeStickyAssignor()]))
    cluster.run_for(300)
    assert member.machine.state is MemberState.STABLE
    return cluster, member.machine


@settings(max_examples=60, deadline=None)
@given(error=ERRORS)
def test_a_heartbeat_answered_with_any_error_does_what_the_table_says(
    error: type[KafkaError],
) -> None:
    cluster, machine = _stable()
    deadline = machine.next_deadline()
    assert deadline is not None
    now = max(cluster.now, deadline)
    (beat,) = machine.next_requests(now)
    assert isinstance(beat, HeartbeatRequest)
    generation = machine.generation
    answered = now + 3
    machine.receive(
        HeartbeatResponse(version=beat.version, correlation=beat.correlation, error=error),
        answered,
    )
    action = action_for(HeartbeatRequest, error)
    m = machine
    if action is A.REJOIN:
        assert m.state is MemberState.STABLE and m.rejoin_needed
    elif action is A.RESET_MEMBER:
        assert m.state is MemberState.UNJOINED and m.member_id == ""
        assert m.rejoin_needed
    elif action is A.FATAL:
        assert m.state is MemberState.FATAL
        assert isinstance(m.fatal_error, error)
    elif action is A.REDISCOVER:
        assert not m.coordinator_known and m.generation == generation
    else:
        assert action is A.RETRY
        assert m.state is MemberState.STABLE and not m.rejoin_needed
        assert m.heartbeat_due_ms == answered + m.config.retry_backoff_ms
