"""Kafka error codes as typed exceptions: codes and names are protocol facts."""

from __future__ import annotations

import inspect

import kafka.errors as kp_errors
import pytest

from groupcoord import errors


def kafka_python_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for _, cls in inspect.getmembers(kp_errors, inspect.isclass):
        if (
            issubclass(cls, kp_errors.BrokerResponseError)
            and getattr(cls, "errno", None) is not None
        ):
            table[cls.errno] = cls.message
    return table


def test_every_code_kafka_python_knows_has_the_same_name_here() -> None:
    # kafka-python spells -1 and 0 differently from Apache Kafka's Errors enum.
    renamed = {-1: "UNKNOWN_SERVER_ERROR"}
    for code, name in kafka_python_table().items():
        if code == 0:
            continue
        ours = errors.KafkaError.for_code(code)
        assert ours.code == code
        assert ours.name == renamed.get(code, name)


def test_codes_are_unique_and_classes_carry_them() -> None:
    wire = [c for c in errors.KafkaError.__subclasses__() if not issubclass(c, errors.ClientError)]
    codes = [cls.code for cls in wire]
    assert len(codes) == len(set(codes))
    assert len(errors.BY_CODE) == len(wire)
    assert errors.BY_CODE[22] is errors.IllegalGenerationError
    assert errors.IllegalGenerationError.name == "ILLEGAL_GENERATION"


def test_unknown_codes_map_to_unknown_server_error() -> None:
    assert errors.KafkaError.for_code(31337) is errors.UnknownServerError


def test_errors_carry_their_name_in_the_message_and_are_groupcoord_errors() -> None:
    with pytest.raises(errors.GroupcoordError, match=r"\[REBALANCE_IN_PROGRESS\] try again"):
        raise errors.RebalanceInProgressError("try again")
    assert errors.CoordinatorNotAvailableError.retriable
    assert not errors.FencedInstanceIdError.retriable
    assert issubclass(errors.InvalidPayload, ValueError)


def test_client_side_errors_are_kafka_errors_as_in_kafkas_clients() -> None:
    # kafka-python: CommitFailedError(KafkaError); Java: CommitFailedException extends
    # KafkaException. Neither has a wire code, so neither is in the code table.
    from groupcoord.member import CommitFailedError

    assert issubclass(kp_errors.CommitFailedError, kp_errors.KafkaError)
    assert issubclass(CommitFailedError, errors.KafkaError)
    assert CommitFailedError not in errors.BY_CODE.values()
    assert errors.KafkaError.for_code(-1) is errors.UnknownServerError
    assert not CommitFailedError.retriable
    assert str(CommitFailedError("gone")) == "[COMMIT_FAILED] gone"
