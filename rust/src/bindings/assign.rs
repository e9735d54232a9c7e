//! `_core.assign` (Python objects in and out) and `_core.assign_encoded` (bytes in
//! and out): read the input, run the algorithm without the GIL, build the result.

use super::assign_input::{
    as_dict, log_warning, member_from_view, read_partition_racks, read_subscription_objects,
    read_topics, Ownership,
};
use super::errors::{from_assign_error, invalid_input, invalid_payload, py_repr};
use super::tuple_maker::PairMaker;
use crate::assign::model::{GroupModel, Plan};
use crate::assign::Algorithm;
use crate::consumer_protocol::{decode_subscription, encode_assignment_into};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple, PyType};

/// Assignment versions we write (Java writes up to 3).
const MAX_ASSIGNMENT_VERSION: i16 = 3;

fn algorithm(py: Python<'_>, kind: &str) -> PyResult<Algorithm> {
    Algorithm::from_name(kind)
        .ok_or_else(|| invalid_input(py, format!("unknown assignor {kind:?}")))
}

fn run(py: Python<'_>, algorithm: Algorithm, model: &GroupModel) -> Plan {
    py.detach(|| algorithm.run(model))
}

/// `assign(kind, partitions_per_topic, subscriptions, topic_partition_type, assignment_type,
/// partition_racks=None)`
#[pyfunction]
#[pyo3(signature = (kind, partitions_per_topic, subscriptions, topic_partition_type, assignment_type, partition_racks=None))]
pub fn assign<'py>(
    py: Python<'py>,
    kind: &str,
    partitions_per_topic: &Bound<'py, PyAny>,
    subscriptions: &Bound<'py, PyAny>,
    topic_partition_type: &Bound<'py, PyType>,
    assignment_type: &Bound<'py, PyAny>,
    partition_racks: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let algorithm = algorithm(py, kind)?;
    let topics = as_dict(partitions_per_topic, "partitions_per_topic")?;
    let subscriptions = as_dict(subscriptions, "subscriptions")?;
    let (mut builder, names) = read_topics(&topics)?;
    let ids = read_subscription_objects(&mut builder, &subscriptions, Ownership::of(algorithm))?;
    read_partition_racks(&mut builder, partition_racks)?;
    let model = builder.build().map_err(|e| from_assign_error(py, &e))?;
    let plan = run(py, algorithm, &model);

    let maker = PairMaker::new(topic_partition_type)?;
    let mut ints: Vec<Option<Bound<'py, PyAny>>> = Vec::new();
    let result = PyDict::new(py);
    for (member, partitions) in model.members.iter().zip(&plan) {
        let mut items = Vec::with_capacity(partitions.len());
        let mut t = 0usize;
        for &p in partitions {
            // partitions are ascending, so the topic cursor only moves forward
            while model.offsets[t + 1] <= p {
                t += 1;
            }
            let number = (p - model.offsets[t]) as usize;
            if ints.len() <= number {
                ints.resize(number + 1, None);
            }
            let int = match &ints[number] {
                Some(i) => i.clone(),
                None => {
                    let i = number.into_pyobject(py)?.into_any();
                    ints[number] = Some(i.clone());
                    i
                }
            };
            items.push(maker.make(&names[t], &int)?);
        }
        let key = &ids[&member.id];
        let partitions = PyTuple::new(py, items)?;
        result.set_item(key, assignment_type.call1((partitions,))?)?;
    }
    Ok(result)
}

/// `assign_encoded(kind, partitions_per_topic, subscriptions, group_instance_ids=None,
/// partition_racks=None)`
#[pyfunction]
#[pyo3(signature = (kind, partitions_per_topic, subscriptions, group_instance_ids=None, partition_racks=None))]
pub fn assign_encoded<'py>(
    py: Python<'py>,
    kind: &str,
    partitions_per_topic: &Bound<'py, PyAny>,
    subscriptions: &Bound<'py, PyAny>,
    group_instance_ids: Option<&Bound<'py, PyAny>>,
    partition_racks: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let algorithm = algorithm(py, kind)?;
    let ownership = Ownership::of(algorithm);
    let topics = as_dict(partitions_per_topic, "partitions_per_topic")?;
    let subscriptions = as_dict(subscriptions, "subscriptions")?;
    let instances = match group_instance_ids {
        Some(obj) if !obj.is_none() => Some(as_dict(obj, "group_instance_ids")?),
        _ => None,
    };
    let (mut builder, _) = read_topics(&topics)?;
    // member id -> (the caller's key object, the version its assignment is written at)
    let mut replies = rustc_hash::FxHashMap::default();
    let mut specs = Vec::with_capacity(subscriptions.len());
    let mut previous_topics = (Vec::new(), std::sync::Arc::from(Vec::new()));
    for (member_id, payload) in subscriptions.iter() {
        let member_id = member_id
            .cast_into::<PyString>()
            .map_err(|_| invalid_input(py, "member ids must be str"))?;
        let id = member_id.to_str()?.to_owned();
        let payload = payload.cast_into::<PyBytes>().or_else(|e| {
            let obj = e.into_inner();
            py.get_type::<PyBytes>()
                .call1((obj,))
                .map_err(|_| invalid_input(py, format!("subscription of {id:?} must be bytes")))
                .and_then(|b| Ok(b.cast_into::<PyBytes>()?))
        })?;
        let view = decode_subscription(payload.as_bytes()).map_err(|e| {
            let member = py_repr(member_id.as_any());
            invalid_payload(py, &format!("subscription of member {member}"), &e)
        })?;
        let (mut spec, warning) =
            member_from_view(&builder, id.clone(), &view, ownership, &mut previous_topics);
        if let Some(warning) = warning {
            log_warning(py, &warning)?;
        }
        if let Some(instances) = &instances {
            if let Some(instance) = instances.get_item(&member_id)? {
                if !instance.is_none() {
                    spec.instance_id = Some(instance.extract()?);
                }
            }
        }
        specs.push(spec);
        replies.insert(
            id,
            (member_id, view.version.clamp(0, MAX_ASSIGNMENT_VERSION)),
        );
    }
    for spec in specs {
        builder.push_member(spec);
    }
    read_partition_racks(&mut builder, partition_racks)?;
    let model = builder.build().map_err(|e| from_assign_error(py, &e))?;
    let plan = run(py, algorithm, &model);

    let result = PyDict::new(py);
    let mut buffer = Vec::new();
    let mut numbers: Vec<i32> = Vec::new();
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    for (member, partitions) in model.members.iter().zip(&plan) {
        // (topic, start, end) spans over `numbers`: one ConsumerProtocol topic entry each
        numbers.clear();
        spans.clear();
        let mut t = 0usize;
        for &p in partitions {
            while model.offsets[t + 1] <= p {
                t += 1;
            }
            match spans.last_mut() {
                Some(span) if span.0 == t => span.2 += 1,
                _ => spans.push((t, numbers.len(), numbers.len() + 1)),
            }
            numbers.push((p - model.offsets[t]) as i32);
        }
        buffer.clear();
        encode_assignment_into(
            &mut buffer,
            replies[member.id.as_str()].1,
            spans
                .iter()
                .map(|&(t, s, e)| (model.topic_names[t].as_str(), &numbers[s..e])),
            None,
        )
        .map_err(|e| invalid_payload(py, &format!("assignment of member {:?}", member.id), &e))?;
        result.set_item(&replies[member.id.as_str()].0, PyBytes::new(py, &buffer))?;
    }
    Ok(result)
}
