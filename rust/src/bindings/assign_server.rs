//! `_core.assign_server`: the KIP-848 server-side assignors (`uniform`, `range`) on
//! members described by topic names and racks, sticky to the current target
//! assignment; results as `{member_id: {topic: [partition, ...]}}`, the shape the
//! current assignment comes in, so a result can be passed back as the next `current`.

use super::assign_input::{as_dict, read_partition_racks, read_topics};
use super::errors::{from_assign_error, invalid_input, py_repr};
use crate::assign::model::{MemberSpec, TopicId};
use crate::assign::ServerAlgorithm;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};

/// `assign_server(kind, partitions_per_topic, members, current=None, partition_racks=None)`
#[pyfunction]
#[pyo3(signature = (kind, partitions_per_topic, members, current=None, partition_racks=None))]
pub fn assign_server<'py>(
    py: Python<'py>,
    kind: &str,
    partitions_per_topic: &Bound<'py, PyAny>,
    members: &Bound<'py, PyAny>,
    current: Option<&Bound<'py, PyAny>>,
    partition_racks: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let algorithm = ServerAlgorithm::from_name(kind)
        .ok_or_else(|| invalid_input(py, format!("unknown server-side assignor {kind:?}")))?;
    let topics = as_dict(partitions_per_topic, "partitions_per_topic")?;
    let members = as_dict(members, "members")?;
    let current = match current {
        Some(obj) if !obj.is_none() => Some(as_dict(obj, "current")?),
        _ => None,
    };
    let (mut builder, names) = read_topics(&topics)?;
    let mut keys = rustc_hash::FxHashMap::default();
    let mut specs = Vec::with_capacity(members.len());
    for (member_id, member) in members.iter() {
        let member_id = member_id
            .cast_into::<PyString>()
            .map_err(|_| invalid_input(py, "member ids must be str"))?;
        let id = member_id.to_str()?.to_owned();
        let mut spec = MemberSpec {
            id: id.clone(),
            ..Default::default()
        };
        for topic in member.getattr(intern!(py, "topics"))?.try_iter()? {
            let topic = topic?;
            let topic = topic
                .cast::<PyString>()
                .map_err(|_| invalid_input(py, format!("topics of {id:?} must be str")))?;
            if let Some(t) = builder.topic_id(topic.to_str()?) {
                spec.topics.push(t);
            }
        }
        let rack = member.getattr(intern!(py, "rack"))?;
        if !rack.is_none() {
            spec.rack = Some(rack.extract()?);
        }
        let instance = member.getattr(intern!(py, "instance_id"))?;
        if !instance.is_none() {
            spec.instance_id = Some(instance.extract()?);
        }
        if let Some(current) = &current {
            if let Some(held) = current.get_item(&member_id)? {
                read_held(&builder, &member_id, &held, &mut spec.owned)?;
            }
        }
        specs.push(spec);
        keys.insert(id, member_id);
    }
    for spec in specs {
        builder.push_member(spec);
    }
    read_partition_racks(&mut builder, partition_racks)?;
    let model = builder.build().map_err(|e| from_assign_error(py, &e))?;
    let plan = py.detach(|| algorithm.run(&model));

    let mut ints: Vec<Option<Bound<'py, PyAny>>> = Vec::new();
    let result = PyDict::new(py);
    for (member, partitions) in model.members.iter().zip(&plan) {
        let assignment = PyDict::new(py);
        let mut t = 0usize;
        let mut start = 0usize;
        // partitions are ascending: one list per run of the same topic
        while start < partitions.len() {
            while model.offsets[t + 1] <= partitions[start] {
                t += 1;
            }
            let end = start
                + partitions[start..]
                    .iter()
                    .take_while(|&&p| p < model.offsets[t + 1])
                    .count();
            let mut items = Vec::with_capacity(end - start);
            for &p in &partitions[start..end] {
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
                items.push(int);
            }
            assignment.set_item(&names[t], PyList::new(py, items)?)?;
            start = end;
        }
        result.set_item(&keys[&member.id], assignment)?;
    }
    Ok(result)
}

/// One member's part of `current`: {topic: partitions}. Unknown topics and partitions
/// out of range are ignored (topics get deleted, partitions never shrink); what is
/// not a partition number is refused as the reference's `read_held` does.
fn read_held(
    builder: &crate::assign::model::ModelBuilder,
    member_id: &Bound<'_, PyString>,
    held: &Bound<'_, PyAny>,
    out: &mut Vec<(TopicId, i64)>,
) -> PyResult<()> {
    let py = held.py();
    let held = as_dict(held, "current assignments")?;
    for (topic, partitions) in held.iter() {
        let topic = topic.cast_into::<PyString>().map_err(|e| {
            invalid_input(
                py,
                format!(
                    "current assignment of {} must map topic names (str) to partitions, got {}",
                    py_repr(member_id.as_any()),
                    py_repr(&e.into_inner())
                ),
            )
        })?;
        let t = builder.topic_id(topic.to_str()?);
        for partition in partitions.try_iter()? {
            let partition = partition?;
            let number = if partition.is_instance_of::<PyBool>() {
                None
            } else {
                partition.extract::<i32>().ok()
            };
            let Some(number) = number else {
                return Err(invalid_input(
                    py,
                    format!(
                        "partitions of {} in current must be int32, got {} in topic {}",
                        py_repr(member_id.as_any()),
                        py_repr(&partition),
                        py_repr(topic.as_any())
                    ),
                ));
            };
            if let Some(t) = t {
                out.push((t, i64::from(number)));
            }
        }
    }
    Ok(())
}
