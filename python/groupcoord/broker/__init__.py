"""The single-node broker behind ``groupcoord serve``, without any I/O but its stores.

The topic log (:mod:`~groupcoord.broker.log`: topics, record batches, idempotent
producers, written through to a :class:`~groupcoord.storage.log_store.LogStore`), the
record-batch codec it validates and rewrites produced batches with
(:mod:`~groupcoord.broker.records`), and the APIs answered from it: the data APIs
(:mod:`~groupcoord.broker.data_apis`: Metadata, CreateTopics, DeleteTopics, Produce,
InitProducerId, Fetch, ListOffsets) and FindCoordinator
(:mod:`~groupcoord.broker.find_coordinator`). Each takes a kio request and returns a kio
response; sockets, frames, long polls and time-outs belong to :mod:`groupcoord.server`.

The group coordinator sees the log only through
:class:`~groupcoord.coordinator.TopicView` (``TopicLog.partition_count``), which the
server injects.
"""

from groupcoord.broker.data_apis import DATA_API_VERSIONS, BrokerInfo, DataApiConfig, DataApis
from groupcoord.broker.find_coordinator import find_coordinator
from groupcoord.broker.log import TopicInfo, TopicLog, validate_topic_name

__all__ = [
    "DATA_API_VERSIONS",
    "BrokerInfo",
    "DataApiConfig",
    "DataApis",
    "TopicInfo",
    "TopicLog",
    "find_coordinator",
    "validate_topic_name",
]
