"""Requests validate themselves; responses carry Kafka's error codes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord import errors
from groupcoord.coordinator import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

MINIMAL: dict[type[Any], dict[str, Any]] = {
    JoinGroupRequest: dict(
        group_id="g",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        protocol_type="consumer",
        protocols=(("range", b""),),
    ),
    SyncGroupRequest: dict(group_id="g", generation_id=1, member_id="m"),
    HeartbeatRequest: dict(group_id="g", generation_id=1, member_id="m"),
    LeaveGroupRequest: dict(group_id="g"),
    OffsetCommitRequest: dict(group_id="g", topics=()),
    OffsetFetchRequest: dict(group_id="g"),
    DescribeGroupsRequest: dict(groups=("g",)),
    ListGroupsRequest: dict(),
    DeleteGroupsRequest: dict(groups_names=("g",)),
}
API_KEYS = {
    JoinGroupRequest: (11, 9),
    SyncGroupRequest: (14, 5),
    HeartbeatRequest: (12, 4),
    LeaveGroupRequest: (13, 5),
    OffsetCommitRequest: (8, 9),
    OffsetFetchRequest: (9, 9),
    DescribeGroupsRequest: (15, 6),
    ListGroupsRequest: (16, 5),
    DeleteGroupsRequest: (42, 2),
}


@pytest.mark.parametrize("cls", list(MINIMAL), ids=lambda c: c.__name__)
def test_every_request_accepts_exactly_its_versions(cls: type[Any]) -> None:
    api_key, max_version = API_KEYS[cls]
    assert (api_key, max_version) == (cls.API_KEY, cls.MAX_VERSION)
    fields = MINIMAL[cls]
    for version in range(max_version + 1):
        if cls is OffsetFetchRequest and version >= 8:
            req = cls(version=version, correlation=("c", version))
        else:
            req = cls(version=version, correlation=("c", version), **fields)
        assert req.version == version and req.correlation == ("c", version)
    for bad in (-1, max_version + 1):
        with pytest.raises(errors.UnsupportedVersionError):
            cls(version=bad, **fields)
    with pytest.raises(TypeError):
        cls(version="1", **fields)


def test_requests_are_frozen_slotted_and_keyword_only() -> None:
    req = HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id="m")
    with pytest.raises(AttributeError):
        req.member_id = "x"  # type: ignore[misc]
    assert not hasattr(req, "__dict__")
    with pytest.raises(TypeError):
        HeartbeatRequest(4, "g", 1, "m")  # type: ignore[call-arg,misc]


def test_fields_checked_by_type() -> None:
    with pytest.raises(TypeError):
        HeartbeatRequest(version=4, group_id=b"g", generation_id=1, member_id="m")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        HeartbeatRequest(version=4, group_id="g", generation_id=2**31, member_id="m")
    with pytest.raises(TypeError):
        DescribeGroupsRequest(version=1, groups="g")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        SyncGroupRequest(
            version=1, group_id="g", generation_id=1, member_id="m", assignments=(("m", 1),)
        )  # type: ignore[arg-type]


def test_error_codes_are_kafkas() -> None:
    assert HeartbeatResponse(version=0).error_code == 0
    for cls, code, name in [
        (errors.UnknownMemberIdError, 25, "UNKNOWN_MEMBER_ID"),
        (errors.IllegalGenerationError, 22, "ILLEGAL_GENERATION"),
        (errors.RebalanceInProgressError, 27, "REBALANCE_IN_PROGRESS"),
        (errors.MemberIdRequiredError, 79, "MEMBER_ID_REQUIRED"),
        (errors.FencedInstanceIdError, 82, "FENCED_INSTANCE_ID"),
        (errors.GroupMaxSizeReachedError, 81, "GROUP_MAX_SIZE_REACHED"),
        (errors.InconsistentGroupProtocolError, 23, "INCONSISTENT_GROUP_PROTOCOL"),
        (errors.InvalidSessionTimeoutError, 26, "INVALID_SESSION_TIMEOUT"),
        (errors.OffsetMetadataTooLargeError, 12, "OFFSET_METADATA_TOO_LARGE"),
        (errors.NonEmptyGroupError, 68, "NON_EMPTY_GROUP"),
        (errors.GroupIdNotFoundError, 69, "GROUP_ID_NOT_FOUND"),
        (errors.CoordinatorNotAvailableError, 15, "COORDINATOR_NOT_AVAILABLE"),
        (errors.InvalidGroupIdError, 24, "INVALID_GROUP_ID"),
    ]:
        assert (cls.code, cls.name) == (code, name)
        assert HeartbeatResponse(version=0, error=cls).error_code == code


@pytest.mark.parametrize("cls", list(MINIMAL), ids=lambda c: c.__name__)
def test_with_correlation_is_the_request_made_with_that_correlation(cls: type[Any]) -> None:
    """The unchecked copy a member uses for repeated requests equals the request built (and
    checked) with the new correlation, in every field and every version; the original is
    left as it was."""
    from groupcoord.coordinator.messages import with_correlation

    for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
        try:
            original = cls(version=version, correlation=1, **MINIMAL[cls])
        except errors.UnsupportedVersionError:
            continue  # MINIMAL's fields do not exist in this version
        copy = with_correlation(original, ("conn", 2))
        assert type(copy) is cls
        assert copy == cls(version=version, correlation=("conn", 2), **MINIMAL[cls])
        assert original.correlation == 1 and copy is not original
        with pytest.raises(AttributeError):
            copy.correlation = 3  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(
    version=st.integers(OffsetCommitRequest.MIN_VERSION, OffsetCommitRequest.MAX_VERSION),
    before=st.dictionaries(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2**31 - 1)),
        st.integers(0, 2**63 - 1),
        min_size=1,
        max_size=6,
    ),
    after=st.lists(st.integers(0, 2**63 - 1), min_size=6, max_size=6),
    instance=st.sampled_from([None, "i-1"]),
)
def test_a_commit_like_the_last_one_is_the_commit_built_anew(
    version: int,
    before: dict[tuple[str, int], int],
    after: list[int],
    instance: str | None,
) -> None:
    """A member's next OffsetCommit of the same partitions is a copy of its last one with
    other offsets (``commit_request(..., like=)``, ``with_committed_offsets``): equal to the
    request built and checked anew; one of other partitions or fields is built anew."""
    from groupcoord.coordinator.messages import with_committed_offsets
    from groupcoord.member.requests import commit_request
    from groupcoord.types import TopicPartition

    def build(offsets: dict[TopicPartition, int], like: Any = None, gen: int = 4) -> Any:
        return commit_request(
            version=version,
            correlation=len(offsets),
            group_id="g",
            generation_id=gen,
            member_id="m-1",
            group_instance_id=instance,
            offsets=offsets,
            like=like,
        )

    first = {TopicPartition(t, p): o for (t, p), o in before.items()}
    last = build(first)
    again = dict(zip(sorted(first), after, strict=False))
    assert build(again, like=last) == build(again)
    # other partitions, another generation: built anew, equal all the same
    fewer = dict(list(again.items())[1:]) or {TopicPartition("z", 0): 1}
    assert build(fewer, like=last) == build(fewer)
    assert build(again, like=last, gen=5) == build(again, gen=5)
    # the offsets are still checked
    with pytest.raises(ValueError, match="out of range"):
        with_committed_offsets(last, 1, [2**63] * len(first))
    with pytest.raises(ValueError, match="offsets for the request"):
        with_committed_offsets(last, 1, [0] * (len(first) + 1))


@pytest.mark.parametrize(
    ("cls", "version"),
    [(JoinGroupRequest, 5), (SyncGroupRequest, 3), (HeartbeatRequest, 3), (OffsetCommitRequest, 7)],
    ids=lambda x: getattr(x, "__name__", str(x)),
)
def test_a_wrong_group_instance_id_is_named_in_the_error(cls: type[Any], version: int) -> None:
    with pytest.raises(TypeError, match=r"^group_instance_id must be a str, not int$"):
        cls(version=version, group_instance_id=7, **MINIMAL[cls])
