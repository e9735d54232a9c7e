//! Reading an assignor's input from Python: the topic table, then each member
//! either from `Subscription` objects or from ConsumerProtocolSubscription bytes.

use super::errors::{from_assign_error, invalid_input, py_repr};
use crate::assign::model::{MemberSpec, ModelBuilder, TopicId};
use crate::assign::Algorithm;
use crate::consumer_protocol::{
    decode_cooperative_user_data, decode_sticky_user_data, SubscriptionView, TopicPartitionsView,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFrozenSet, PySet, PyString, PyTuple};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Where an algorithm reads previous ownership from (see `OwnershipSource` in Python).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    None,
    /// owned_partitions + generation_id, else StickyAssignorUserData V1/V0.
    Sticky,
    /// owned_partitions + generation_id, the generation falling back to the
    /// cooperative user data (an int32).
    Cooperative,
}

impl Ownership {
    pub fn of(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::Range | Algorithm::RoundRobin => Self::None,
            Algorithm::Sticky => Self::Sticky,
            Algorithm::CooperativeSticky => Self::Cooperative,
        }
    }
}

pub fn as_dict<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyDict>> {
    match obj.cast::<PyDict>() {
        Ok(d) => Ok(d.clone()),
        Err(_) => {
            let py = obj.py();
            let dict = py
                .get_type::<PyDict>()
                .call1((obj,))
                .map_err(|_| invalid_input(py, format!("{what} must be a mapping")))?;
            Ok(dict.cast_into::<PyDict>()?)
        }
    }
}

fn int_value(obj: &Bound<'_, PyAny>, what: impl FnOnce() -> String) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() {
        return Err(invalid_input(
            obj.py(),
            format!("{} must be an int, not bool", what()),
        ));
    }
    obj.extract::<i64>()
        .map_err(|_| invalid_input(obj.py(), format!("{} must be an int", what())))
}

/// The topic table; `names[t]` is the caller's own str object for topic id `t`,
/// reused in the results so no new strings are made.
pub fn read_topics<'py>(
    partitions_per_topic: &Bound<'py, PyDict>,
) -> PyResult<(ModelBuilder, Vec<Bound<'py, PyString>>)> {
    let py = partitions_per_topic.py();
    let mut topics = Vec::with_capacity(partitions_per_topic.len());
    let mut objects = Vec::with_capacity(partitions_per_topic.len());
    for (name, count) in partitions_per_topic.iter() {
        let name = name
            .cast_into::<PyString>()
            .map_err(|_| invalid_input(py, "topic names must be str"))?;
        let text = name.to_str()?.to_owned();
        let count = int_value(&count, || format!("partition count of topic {text:?}"))?;
        topics.push((text, count));
        objects.push(name);
    }
    let builder = ModelBuilder::new(topics).map_err(|e| from_assign_error(py, &e))?;
    let mut names: Vec<Option<Bound<'py, PyString>>> = vec![None; builder.num_topics()];
    for name in objects {
        let t = builder.topic_id(name.to_str()?).expect("interned above");
        names[t as usize] = Some(name);
    }
    Ok((
        builder,
        names
            .into_iter()
            .map(|n| n.expect("every topic named"))
            .collect(),
    ))
}

/// Resolves topic names to ids, remembering str objects by address: members share
/// the same str objects, so most look-ups never hash the text.
struct TopicLookup<'b> {
    builder: &'b ModelBuilder,
    by_address: FxHashMap<usize, Option<TopicId>>,
}

impl TopicLookup<'_> {
    fn get(&mut self, name: &Bound<'_, PyString>) -> PyResult<Option<TopicId>> {
        let key = name.as_ptr() as usize;
        if let Some(&t) = self.by_address.get(&key) {
            return Ok(t);
        }
        let t = self.builder.topic_id(name.to_str()?);
        self.by_address.insert(key, t);
        Ok(t)
    }
}

/// Reads every `(member_id, Subscription)` of `subscriptions` into `builder`.
/// Returns the member-id str objects, for the result dict's keys.
pub fn read_subscription_objects<'py>(
    builder: &mut ModelBuilder,
    subscriptions: &Bound<'py, PyDict>,
    ownership: Ownership,
) -> PyResult<FxHashMap<String, Bound<'py, PyString>>> {
    let py = subscriptions.py();
    let mut lookup = TopicLookup {
        builder: &*builder,
        by_address: FxHashMap::default(),
    };
    let mut ids = FxHashMap::default();
    let mut specs = Vec::with_capacity(subscriptions.len());
    for (member_id, sub) in subscriptions.iter() {
        let member_id = member_id
            .cast_into::<PyString>()
            .map_err(|_| invalid_input(py, "member ids must be str"))?;
        let id = member_id.to_str()?.to_owned();
        let mut spec = MemberSpec {
            id: id.clone(),
            ..Default::default()
        };
        let mut topics = Vec::new();
        for topic in sub.getattr(intern!(py, "topics"))?.try_iter()? {
            let topic = topic?;
            let topic = topic
                .cast::<PyString>()
                .map_err(|_| invalid_input(py, format!("topics of {id:?} must be str")))?;
            if let Some(t) = lookup.get(topic)? {
                topics.push(t);
            }
        }
        spec.topics = topics.into();
        let instance = sub.getattr(intern!(py, "group_instance_id"))?;
        if !instance.is_none() {
            spec.instance_id = Some(instance.extract()?);
        }
        let rack = sub.getattr(intern!(py, "rack_id"))?;
        if !rack.is_none() {
            spec.rack = Some(rack.extract()?);
        }
        if ownership != Ownership::None {
            read_owned_objects(&mut lookup, &sub, ownership, &mut spec)?;
        } else {
            // unused by range and round-robin, but refused alike by every assignor
            check_owned_objects(&sub, &member_id)?;
        }
        specs.push(spec);
        ids.insert(id, member_id);
    }
    for spec in specs {
        builder.push_member(spec);
    }
    Ok(ids)
}

/// One owned partition as a `(str, int32)` tuple, or `None`: the rule of the reference's
/// `owned_claim` (python/groupcoord/reference/assign/model.py), which words the error alike.
fn owned_claim<'py>(item: &Bound<'py, PyAny>) -> PyResult<Option<(Bound<'py, PyString>, i32)>> {
    let Ok(pair) = item.cast::<PyTuple>() else {
        return Ok(None);
    };
    if pair.len() != 2 {
        return Ok(None);
    }
    let topic = pair.get_borrowed_item(0)?;
    let partition = pair.get_borrowed_item(1)?;
    let Ok(topic) = topic.cast::<PyString>() else {
        return Ok(None);
    };
    if partition.is_instance_of::<PyBool>() {
        return Ok(None);
    }
    Ok(partition
        .extract::<i32>()
        .ok()
        .map(|p| (topic.to_owned(), p)))
}

fn check_owned_objects(sub: &Bound<'_, PyAny>, member_id: &Bound<'_, PyString>) -> PyResult<()> {
    let py = sub.py();
    for item in sub.getattr(intern!(py, "owned_partitions"))?.try_iter()? {
        let item = item?;
        if owned_claim(&item)?.is_none() {
            return Err(bad_claim(member_id, &item));
        }
    }
    Ok(())
}

fn read_owned_objects(
    lookup: &mut TopicLookup<'_>,
    sub: &Bound<'_, PyAny>,
    ownership: Ownership,
    spec: &mut MemberSpec,
) -> PyResult<()> {
    let py = sub.py();
    let owned = sub.getattr(intern!(py, "owned_partitions"))?;
    let generation = sub
        .getattr(intern!(py, "generation_id"))?
        .extract::<i32>()?;
    let user_data = sub.getattr(intern!(py, "user_data"))?;
    let user_data: Option<Vec<u8>> = if user_data.is_none() {
        None
    } else {
        Some(user_data.extract()?)
    };
    let has_owned = owned.len()? > 0;
    spec.generation = generation;
    if has_owned || ownership == Ownership::Cooperative {
        for item in owned.try_iter()? {
            let item = item?;
            let Some((topic, partition)) = owned_claim(&item)? else {
                return Err(bad_claim(&PyString::new(py, &spec.id), &item));
            };
            if let Some(t) = lookup.get(&topic)? {
                spec.owned.push((t, i64::from(partition)));
            }
        }
    }
    if let Some(warning) = apply_user_data(
        lookup.builder,
        ownership,
        has_owned,
        user_data.as_deref(),
        spec,
    ) {
        log_warning(py, &warning)?;
    }
    Ok(())
}

/// Reads previous ownership from user data where the assignor's protocol puts it.
///
/// A leader cannot refuse to assign, so user data it cannot read (another client's
/// layout, garbage) is ignored, as Java's assignors do, and a warning is returned
/// for the caller to log. kafka-python 3.0.12 writes sticky user data behind an
/// int16 version that Java does not write; that layout is read too.
pub fn apply_user_data(
    builder: &ModelBuilder,
    ownership: Ownership,
    has_owned: bool,
    user_data: Option<&[u8]>,
    spec: &mut MemberSpec,
) -> Option<String> {
    let data = user_data.filter(|d| !d.is_empty())?;
    match ownership {
        Ownership::Sticky if !has_owned => {
            let decoded = decode_sticky_user_data(data).or_else(|e| match data {
                [0, 0 | 1, rest @ ..] => decode_sticky_user_data(rest).map_err(|_| e),
                _ => Err(e),
            });
            match decoded {
                Ok(view) => {
                    push_views(builder, &view.partitions, &mut spec.owned);
                    spec.generation = view.generation.unwrap_or(-1);
                    None
                }
                Err(e) => Some(format!(
                    "ignoring unreadable sticky user data of member {:?}: {e}",
                    spec.id
                )),
            }
        }
        Ownership::Cooperative if spec.generation == -1 => match decode_cooperative_user_data(data)
        {
            Ok(generation) => {
                spec.generation = generation;
                None
            }
            Err(e) => Some(format!(
                "ignoring unreadable cooperative user data of member {:?}: {e}",
                spec.id
            )),
        },
        _ => None,
    }
}

/// `logging.getLogger("groupcoord.assignors").warning(message)`
pub fn log_warning(py: Python<'_>, message: &str) -> PyResult<()> {
    py.import("logging")?
        .call_method1("getLogger", ("groupcoord.assignors",))?
        .call_method1("warning", ("%s", message))?;
    Ok(())
}

/// Worded as the reference's `owned_claim`, with Python reprs, so both backends say the same.
fn bad_claim(member_id: &Bound<'_, PyString>, item: &Bound<'_, PyAny>) -> PyErr {
    invalid_input(
        item.py(),
        format!(
            "owned partitions of {} must be (str, int32) pairs, got {}",
            py_repr(member_id.as_any()),
            py_repr(item)
        ),
    )
}

fn push_views(
    builder: &ModelBuilder,
    views: &[TopicPartitionsView<'_>],
    out: &mut Vec<(TopicId, i64)>,
) {
    out.reserve(views.iter().map(|v| v.partitions.len()).sum());
    let mut hint = None;
    for view in views {
        if let Some(t) = builder.topic_id_near(view.topic, &mut hint) {
            out.extend(view.partitions.iter().map(|p| (t, i64::from(p))));
        }
    }
}

/// Builds a member from a decoded ConsumerProtocolSubscription. `previous_topics`
/// caches the last member's topic list by its raw bytes: in a group with identical
/// subscriptions each member's topic array is the same bytes, so interning is a memcmp.
pub fn member_from_view(
    builder: &ModelBuilder,
    id: String,
    view: &SubscriptionView<'_>,
    ownership: Ownership,
    previous_topics: &mut (Vec<u8>, Arc<[TopicId]>),
) -> (MemberSpec, Option<String>) {
    let topics = if previous_topics.0 == view.topics_bytes {
        previous_topics.1.clone()
    } else {
        let mut hint = None;
        let topics: Arc<[TopicId]> = view
            .topics
            .iter()
            .filter_map(|t| builder.topic_id_near(t, &mut hint))
            .collect();
        *previous_topics = (view.topics_bytes.to_vec(), Arc::clone(&topics));
        topics
    };
    let mut spec = MemberSpec {
        id,
        instance_id: None,
        topics,
        owned: Vec::new(),
        held: Vec::new(),
        generation: view.generation_id,
        rack: view.rack_id.map(str::to_owned),
    };
    let has_owned = !view.owned_partitions.is_empty();
    if ownership != Ownership::None {
        if has_owned || ownership == Ownership::Cooperative {
            push_views(builder, &view.owned_partitions, &mut spec.owned);
        }
        let warning = apply_user_data(builder, ownership, has_owned, view.user_data, &mut spec);
        return (spec, warning);
    }
    (spec, None)
}

/// Reads `partition_racks` ({(topic, partition): set of rack ids}, KIP-881) into
/// `builder`, refusing what the reference's `read_partition_racks`
/// (python/groupcoord/reference/assign/rack.py) refuses, worded alike. Entries of
/// unknown topics or partitions out of range are ignored, as metadata the group
/// cannot see would be.
pub fn read_partition_racks(
    builder: &mut ModelBuilder,
    partition_racks: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let Some(obj) = partition_racks.filter(|o| !o.is_none()) else {
        return Ok(());
    };
    let py = obj.py();
    let racks = as_dict(obj, "partition_racks")?;
    let mut names: FxHashMap<usize, Option<TopicId>> = FxHashMap::default();
    for (key, value) in racks.iter() {
        let Some((topic, partition)) = owned_claim(&key)? else {
            return Err(invalid_input(
                py,
                format!(
                    "partition_racks keys must be (str, int32) pairs, got {}",
                    py_repr(&key)
                ),
            ));
        };
        let bad_value = || {
            invalid_input(
                py,
                format!(
                    "racks of {} must be a set or frozenset of str, got {}",
                    py_repr(&key),
                    py_repr(&value)
                ),
            )
        };
        if !(value.is_instance_of::<PySet>() || value.is_instance_of::<PyFrozenSet>()) {
            return Err(bad_value());
        }
        let mut rack_names = Vec::with_capacity(value.len()?);
        for rack in value.try_iter()? {
            let rack = rack?;
            let rack = rack.cast::<PyString>().map_err(|_| bad_value())?;
            rack_names.push(rack.to_str()?.to_owned());
        }
        let address = topic.as_ptr() as usize;
        let t = match names.get(&address) {
            Some(&t) => t,
            None => {
                let t = builder.topic_id(topic.to_str()?);
                names.insert(address, t);
                t
            }
        };
        if let Some(t) = t {
            builder.add_partition_racks(t, i64::from(partition), rack_names);
        }
    }
    Ok(())
}
