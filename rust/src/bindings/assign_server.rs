//! `_core.assign_server`: the KIP-848 server-side assignors (`uniform`, `range`) on
//! members described by topic names and racks, sticky to the current target
//! assignment; results as `{member_id: {topic: (partition, ...)}}`, a shape `current`
//! is taken in, so a result can be passed back as the next `current`.
//!
//! `_core.ServerTarget`: the same, with the target assignment kept here between calls
//! (a coordinator recomputes its group's target on every change): the previous target
//! is not read back from a million Python ints, which at 10,000 members was most of
//! the time of a recomputation after one member left, and members whose partitions
//! did not change get a copy of their kept dict rather than one built anew.

use super::assign_input::{as_dict, read_partition_racks, read_topics};
use super::current_input::CurrentReader;
use super::errors::{from_assign_error, invalid_input};
use crate::assign::model::{DenseId, GroupModel, MemberSpec, TopicId};
use crate::assign::ServerAlgorithm;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use rustc_hash::FxHashMap;

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
    let algorithm = algorithm(py, kind)?;
    let current = match current {
        Some(obj) if !obj.is_none() => Current::Given(as_dict(obj, "current")?),
        _ => Current::Nothing,
    };
    let ran = run(
        py,
        algorithm,
        partitions_per_topic,
        members,
        current,
        partition_racks,
    )?;
    result(py, ran)
}

/// `plain_current(current)`: whether every value of the dict `current` is a dict (exactly:
/// a subclass may iterate otherwise) whose keys are all str, the shape `ServerAssignor.assign` requires of a current target.
/// True lets it skip its own check of every topic key (a million for range's result at
/// 10,000 members); False says nothing, and that check then runs and reports.
#[pyfunction]
pub fn plain_current(current: &Bound<'_, PyDict>) -> bool {
    // SAFETY: `current` is a live dict, values are checked to be dicts before being
    // walked, and the GIL is held throughout.
    unsafe {
        all_items(current.as_ptr(), |_, held| {
            ffi::PyDict_CheckExact(held) != 0
                && all_items(held, |topic, _| ffi::PyUnicode_Check(topic) != 0)
        })
    }
}

/// Whether `ok(key, value)` holds for every item of `dict`, walked with PyDict_Next's
/// borrowed references: PyO3's iterator takes and drops two references per item, most
/// of the time of a million keys. `ok` must not call into Python (no dict may change).
///
/// # Safety
/// `dict` is a live dict and the GIL is held.
unsafe fn all_items(
    dict: *mut ffi::PyObject,
    mut ok: impl FnMut(*mut ffi::PyObject, *mut ffi::PyObject) -> bool,
) -> bool {
    let mut pos: ffi::Py_ssize_t = 0;
    let mut key = std::ptr::null_mut();
    let mut value = std::ptr::null_mut();
    while ffi::PyDict_Next(dict, &mut pos, &mut key, &mut value) != 0 {
        if !ok(key, value) {
            return false;
        }
    }
    true
}

/// `ServerTarget(kind)`: a group's target assignment, kept between computations.
///
/// While the topic table stays the same (names and partition counts), the next
/// computation is incremental at both ends: members' kept partitions go into the model
/// as dense ids without conversion or checks ([`MemberSpec::held`]), and a member whose
/// partitions did not change gets a copy of its kept `{topic: partitions}` dict instead
/// of one built anew (after one member of 10,000 leaves, that is all but a hundred with
/// `uniform` and all of them with `range`).
#[pyclass(name = "ServerTarget", module = "groupcoord._core")]
pub struct ServerTargetPy {
    algorithm: ServerAlgorithm,
    kind: String,
    /// the kept target's topic table: names in dense order and their dense offsets
    topic_names: Vec<String>,
    offsets: Vec<DenseId>,
    /// member id -> its part of the kept target
    held: FxHashMap<String, Held>,
}

/// One member's part of a kept target.
struct Held {
    /// dense ids of the kept topic table, ascending
    plan: Vec<DenseId>,
    /// `{topic: partitions}` as built for it; private (callers get copies), so it
    /// still says what `plan` says however callers change theirs
    dict: Py<PyDict>,
}

#[pymethods]
impl ServerTargetPy {
    #[new]
    fn new(py: Python<'_>, kind: &str) -> PyResult<Self> {
        Ok(Self {
            algorithm: algorithm(py, kind)?,
            kind: kind.to_owned(),
            topic_names: Vec::new(),
            offsets: Vec::new(),
            held: FxHashMap::default(),
        })
    }

    /// `assign(partitions_per_topic, members, partition_racks=None, current=None)`: the
    /// new target, sticky to the kept one (as `assign_server` with it as `current`); then
    /// kept. A `current` given is used instead of the kept target (the caller's target
    /// changed outside this object: a renamed static member, a group read from a store).
    #[pyo3(signature = (partitions_per_topic, members, partition_racks=None, current=None))]
    fn assign<'py>(
        &mut self,
        py: Python<'py>,
        partitions_per_topic: &Bound<'py, PyAny>,
        members: &Bound<'py, PyAny>,
        partition_racks: Option<&Bound<'py, PyAny>>,
        current: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let current = match current {
            Some(obj) if !obj.is_none() => Current::Given(as_dict(obj, "current")?),
            _ => Current::Kept {
                topic_names: &self.topic_names,
                offsets: &self.offsets,
                held: &self.held,
            },
        };
        let ran = run(
            py,
            self.algorithm,
            partitions_per_topic,
            members,
            current,
            partition_racks,
        )?;
        // a kept dict says the same only when dense ids mean the same partitions
        let reuse = |m: usize, partitions: &[DenseId]| {
            let held = self.held.get(&ran.model.members[m].id)?;
            (ran.same_topics && held.plan == partitions).then(|| held.dict.bind(py).clone())
        };
        let (out, dicts) = kept_result(py, &ran, reuse)?;
        let Ran { model, plan, .. } = ran;
        self.held = model
            .members
            .into_iter()
            .zip(plan)
            .zip(dicts)
            .map(|((member, plan), dict)| (member.id, Held { plan, dict }))
            .collect();
        self.topic_names = model.topic_names;
        self.offsets = model.offsets;
        Ok(out)
    }

    /// Forget the kept target (the next `assign` starts fresh).
    fn clear(&mut self) {
        self.topic_names.clear();
        self.offsets.clear();
        self.held.clear();
    }

    #[getter]
    fn kind(&self) -> &str {
        &self.kind
    }

    /// Members in the kept target.
    fn __len__(&self) -> usize {
        self.held.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "ServerTarget({:?}, members={}, partitions={})",
            self.kind,
            self.held.len(),
            self.held.values().map(|h| h.plan.len()).sum::<usize>()
        )
    }
}

fn algorithm(py: Python<'_>, kind: &str) -> PyResult<ServerAlgorithm> {
    ServerAlgorithm::from_name(kind)
        .ok_or_else(|| invalid_input(py, format!("unknown server-side assignor {kind:?}")))
}

/// Where the current target assignment comes from.
enum Current<'a, 'py> {
    Nothing,
    /// `{member_id: {topic: partitions}}` from the caller
    Given(Bound<'py, PyDict>),
    /// a [`ServerTargetPy`]'s
    Kept {
        topic_names: &'a [String],
        offsets: &'a [DenseId],
        held: &'a FxHashMap<String, Held>,
    },
}

type Plan = Vec<Vec<DenseId>>;

/// A computation: the model, its plan, the caller's topic name objects (by topic id) and
/// member id objects (by member index), reused in the result.
struct Ran<'py> {
    model: GroupModel,
    plan: Plan,
    names: Vec<Bound<'py, PyString>>,
    keys: Vec<Bound<'py, PyString>>,
    /// whether the model's topic table is the kept target's (dense ids mean the same)
    same_topics: bool,
}

/// Read the group and run the algorithm.
fn run<'py>(
    py: Python<'py>,
    algorithm: ServerAlgorithm,
    partitions_per_topic: &Bound<'py, PyAny>,
    members: &Bound<'py, PyAny>,
    current: Current<'_, 'py>,
    partition_racks: Option<&Bound<'py, PyAny>>,
) -> PyResult<Ran<'py>> {
    let topics = as_dict(partitions_per_topic, "partitions_per_topic")?;
    let members = as_dict(members, "members")?;
    // range ignores the current assignment (as Kafka's), so it is not even read: at
    // 10,000 members its million single-partition entries cost more than assigning
    let read_claims = algorithm != ServerAlgorithm::Range;
    let (mut builder, names) = read_topics(&topics)?;
    let same_topics = match &current {
        Current::Kept {
            topic_names,
            offsets,
            ..
        } => builder.same_topics(topic_names, offsets),
        _ => false,
    };
    // a kept target of another topic table names topics by index: their ids in this
    // model, looked up once
    let kept_topics: Vec<Option<TopicId>> = match &current {
        Current::Kept { topic_names, .. } if read_claims && !same_topics => {
            topic_names.iter().map(|n| builder.topic_id(n)).collect()
        }
        _ => Vec::new(),
    };
    let mut reader = CurrentReader::new(&names);
    let mut keys = Vec::with_capacity(members.len());
    let mut specs = Vec::with_capacity(members.len());
    // Members with equal subscriptions usually share one topics object (the coordinator
    // interns them): resolve each object once, by address. `alive` holds every object
    // seen, so no address is reused for another one while we read.
    let mut resolved: FxHashMap<usize, std::sync::Arc<[TopicId]>> = FxHashMap::default();
    let mut alive = Vec::new();
    for (member_id, member) in members.iter() {
        let member_id = member_id
            .cast_into::<PyString>()
            .map_err(|_| invalid_input(py, "member ids must be str"))?;
        let mut spec = MemberSpec {
            id: member_id.to_str()?.to_owned(),
            ..Default::default()
        };
        let topics = member.getattr(intern!(py, "topics"))?;
        let address = topics.as_ptr() as usize;
        if let Some(ids) = resolved.get(&address) {
            spec.topics = std::sync::Arc::clone(ids);
        } else {
            let mut ids = Vec::new();
            for topic in topics.try_iter()? {
                let topic = topic?;
                let topic = topic.cast::<PyString>().map_err(|_| {
                    invalid_input(py, format!("topics of {:?} must be str", spec.id))
                })?;
                if let Some(t) = builder.topic_id(topic.to_str()?) {
                    ids.push(t);
                }
            }
            spec.topics = ids.into();
            resolved.insert(address, std::sync::Arc::clone(&spec.topics));
            alive.push(topics);
        }
        let rack = member.getattr(intern!(py, "rack"))?;
        if !rack.is_none() {
            spec.rack = Some(rack.extract()?);
        }
        let instance = member.getattr(intern!(py, "instance_id"))?;
        if !instance.is_none() {
            spec.instance_id = Some(instance.extract()?);
        }
        match &current {
            _ if !read_claims => {}
            Current::Nothing => {}
            Current::Given(current) => {
                if let Some(held) = current.get_item(&member_id)? {
                    reader.read(&builder, &member_id, &held, &mut spec)?;
                }
            }
            Current::Kept { offsets, held, .. } => {
                if let Some(held) = held.get(&spec.id) {
                    if same_topics {
                        spec.held.clone_from(&held.plan);
                    } else {
                        spec.owned = kept_claims(offsets, &kept_topics, &held.plan);
                    }
                }
            }
        }
        specs.push(spec);
        keys.push(member_id);
    }
    // the model orders members by id: so do their key objects (members usually come in
    // that order already, and then neither is moved)
    if !specs.windows(2).all(|w| w[0].id < w[1].id) {
        let mut pairs: Vec<_> = specs.into_iter().zip(keys).collect();
        pairs.sort_unstable_by(|a, b| a.0.id.cmp(&b.0.id));
        (specs, keys) = pairs.into_iter().unzip();
    }
    builder.push_members(specs);
    read_partition_racks(&mut builder, partition_racks)?;
    let model = builder.build().map_err(|e| from_assign_error(py, &e))?;
    let plan = py.detach(|| algorithm.run(&model));
    Ok(Ran {
        model,
        plan,
        names,
        keys,
        same_topics,
    })
}

/// A kept plan (dense ids of the kept table, `offsets`) as claims on this model's
/// topics: `kept_topics` maps kept topic indexes to this model's ids (`None`: gone).
fn kept_claims(
    offsets: &[DenseId],
    kept_topics: &[Option<TopicId>],
    plan: &[DenseId],
) -> Vec<(TopicId, i64)> {
    let mut t = 0usize;
    let mut owned = Vec::with_capacity(plan.len());
    for &p in plan {
        while offsets[t + 1] <= p {
            t += 1;
        }
        if let Some(id) = kept_topics[t] {
            owned.push((id, i64::from(p - offsets[t])));
        }
    }
    owned
}

/// `{member_id: {topic: (partition, ...)}}` of a plan.
/// Each member's list is dropped once its dict is built: the memory it frees is what
/// the next dicts are allocated from (range's plan is a million ids, its result dicts
/// six times that), rather than pages the process has not touched yet.
fn result<'py>(py: Python<'py>, ran: Ran<'py>) -> PyResult<Bound<'py, PyDict>> {
    let result = PyDict::new(py);
    let mut runs = RunTuples::default();
    let (offsets, names) = (&ran.model.offsets, &ran.names);
    for (key, partitions) in ran.keys.iter().zip(ran.plan) {
        result.set_item(
            key,
            member_dict(py, offsets, names, &partitions, &mut runs)?,
        )?;
    }
    Ok(result)
}

/// [`result`] for a kept target: each member's dict is `reuse(member index, its
/// partitions)` when that gives one, else built; the result holds copies, and the
/// dicts (by member index) are returned to be kept.
fn kept_result<'py>(
    py: Python<'py>,
    ran: &Ran<'py>,
    reuse: impl Fn(usize, &[DenseId]) -> Option<Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyDict>, Vec<Py<PyDict>>)> {
    let result = PyDict::new(py);
    let mut runs = RunTuples::default();
    let mut kept = Vec::with_capacity(ran.plan.len());
    for (m, (key, partitions)) in ran.keys.iter().zip(&ran.plan).enumerate() {
        let assignment = match reuse(m, partitions) {
            Some(dict) => dict,
            None => member_dict(py, &ran.model.offsets, &ran.names, partitions, &mut runs)?,
        };
        result.set_item(key, assignment.copy()?)?;
        kept.push(assignment.unbind());
    }
    Ok((result, kept))
}

/// One member's `{topic: (partition, ...)}` of ascending dense ids, topics in dense order.
fn member_dict<'py>(
    py: Python<'py>,
    offsets: &[DenseId],
    names: &[Bound<'py, PyString>],
    partitions: &[DenseId],
    runs: &mut RunTuples<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    // partitions are ascending: one (topic, start, end) per run of the same topic, in a
    // buffer kept across members; in the same pass, whether every run holds the same
    // partition numbers as the first (range's members: one partition of every topic)
    let mut spans = std::mem::take(&mut runs.spans);
    spans.clear();
    let mut same = true;
    let mut t = 0usize;
    let mut start = 0usize;
    while start < partitions.len() {
        let p = partitions[start];
        if offsets[t + 1] <= p {
            t += leading(&offsets[t + 1..], |o| o <= p);
        }
        let next_topic = offsets[t + 1];
        let mut end = start + 1;
        // a linear walk: every partition is read again for its tuple anyway
        while end < partitions.len() && partitions[end] < next_topic {
            end += 1;
        }
        if same {
            if let Some(&(t0, s0, e0)) = spans.first() {
                same = end - start == e0 - s0
                    && partitions[start..end]
                        .iter()
                        .zip(&partitions[s0..e0])
                        .all(|(&p, &q)| p - offsets[t] == q - offsets[t0]);
            }
        }
        spans.push((t, start, end));
        start = end;
    }
    let numbers = |&(t, start, end): &(usize, usize, usize)| {
        let first = offsets[t];
        partitions[start..end].iter().map(move |&p| p - first)
    };
    let out = if spans.len() >= SAME_VALUE_MIN && same {
        // Range gives each of its first members the same partition of every topic: one
        // tuple for hundreds of topics. A copy of a `{topic: None}` dict of those topics
        // is presized and hashed already (inserting a thousand keys one by one resizes
        // seven times); only the values are then set.
        let (_, start, end) = spans[0];
        let value = runs.tuple(py, numbers(&spans[0]), end - start)?;
        let dict = runs.keys(py, names, &spans)?.copy()?;
        for &(t, _, _) in &spans {
            set_item(&dict, &names[t], &value)?;
        }
        dict
    } else {
        let dict = PyDict::new(py);
        for span in &spans {
            let (t, start, end) = *span;
            set_item(
                &dict,
                &names[t],
                &runs.tuple(py, numbers(span), end - start)?,
            )?;
        }
        dict
    };
    runs.spans = spans;
    Ok(out)
}

/// How many of the first items of `items` satisfy `pred`, which holds for a prefix of
/// them: galloping, so a run of one (range's members, a partition of each topic) costs
/// a comparison or two and a long one (uniform's) a logarithm.
fn leading(items: &[DenseId], pred: impl Fn(DenseId) -> bool) -> usize {
    if items.first().is_none_or(|&x| !pred(x)) {
        return 0;
    }
    let mut hi = 1;
    while hi < items.len() && pred(items[hi]) {
        hi *= 2;
    }
    let lo = hi / 2;
    lo + items[lo..hi.min(items.len())].partition_point(|&x| pred(x))
}

/// `dict[key] = value` without PyO3's conversions (a million times for range's result).
fn set_item(
    dict: &Bound<'_, PyDict>,
    key: &Bound<'_, PyString>,
    value: &Bound<'_, PyTuple>,
) -> PyResult<()> {
    // SAFETY: three live objects, the GIL held; PyDict_SetItem takes its own references.
    if unsafe { ffi::PyDict_SetItem(dict.as_ptr(), key.as_ptr(), value.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(PyErr::fetch(dict.py()))
    }
}

/// Members with this many topics or more, all holding one tuple, get their dict as a
/// copy of a keys dict (below it, building the keys dict costs more than the inserts).
const SAME_VALUE_MIN: usize = 16;

/// Builds the partition tuples of a result, sharing what can be shared: a tuple is
/// immutable, so every run `start..start + len` of consecutive partition numbers is one
/// object however many (member, topic) pairs hold it, and every int is made once. Range
/// at 10,000 members x 1,000 topics hands out a million single-partition runs that are
/// a thousand distinct tuples.
#[derive(Default)]
struct RunTuples<'py> {
    ints: Vec<Option<Bound<'py, PyAny>>>,
    /// `(n,)` by `n`: the million runs of range are these, looked up without hashing
    singles: Vec<Option<Bound<'py, PyTuple>>>,
    consecutive: rustc_hash::FxHashMap<(u32, usize), Bound<'py, PyTuple>>,
    /// the last keys dict [`Self::keys`] built, and its topics
    last_keys: Option<(Vec<usize>, Bound<'py, PyDict>)>,
    /// [`member_dict`]'s buffer of (topic, start, end) runs
    spans: Vec<(usize, usize, usize)>,
}

impl<'py> RunTuples<'py> {
    fn int(&mut self, py: Python<'py>, number: u32) -> PyResult<Bound<'py, PyAny>> {
        let n = number as usize;
        if self.ints.len() <= n {
            self.ints.resize(n + 1, None);
        }
        if let Some(i) = &self.ints[n] {
            return Ok(i.clone());
        }
        let i = number.into_pyobject(py)?.into_any();
        self.ints[n] = Some(i.clone());
        Ok(i)
    }

    /// `{names[t]: None}` for the topics of `spans` (in that order), the keys of a
    /// member's dict; members in a row mostly have the same ones, so the last is reused.
    fn keys(
        &mut self,
        py: Python<'py>,
        names: &[Bound<'py, PyString>],
        spans: &[(usize, usize, usize)],
    ) -> PyResult<Bound<'py, PyDict>> {
        if let Some((last, keys)) = &self.last_keys {
            if last.iter().copied().eq(spans.iter().map(|s| s.0)) {
                return Ok(keys.clone());
            }
        }
        let keys = PyDict::new(py);
        for &(t, _, _) in spans {
            keys.set_item(&names[t], py.None())?;
        }
        self.last_keys = Some((spans.iter().map(|s| s.0).collect(), keys.clone()));
        Ok(keys)
    }

    /// `numbers`: ascending partition numbers, `len` of them.
    fn tuple(
        &mut self,
        py: Python<'py>,
        numbers: impl Iterator<Item = u32> + Clone,
        len: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mut it = numbers.clone();
        let first = it.next().expect("runs are non-empty");
        if len == 1 {
            let n = first as usize;
            if self.singles.len() <= n {
                self.singles.resize(n + 1, None);
            }
            if let Some(t) = &self.singles[n] {
                return Ok(t.clone());
            }
            let tuple = untracked(PyTuple::new(py, [self.int(py, first)?])?);
            self.singles[n] = Some(tuple.clone());
            return Ok(tuple);
        }
        let last = it.last().unwrap_or(first);
        let consecutive = (last - first) as usize + 1 == len;
        if consecutive {
            if let Some(t) = self.consecutive.get(&(first, len)) {
                return Ok(t.clone());
            }
        }
        let items = numbers
            .map(|n| self.int(py, n))
            .collect::<PyResult<Vec<_>>>()?;
        let tuple = untracked(PyTuple::new(py, items)?);
        if consecutive {
            self.consecutive.insert((first, len), tuple.clone());
        }
        Ok(tuple)
    }
}

/// `tuple` (of ints) untracked by the cycle collector: ints cannot form a cycle, and
/// CPython untracks such tuples at their first collection anyway. Born untracked, they
/// also leave the dicts holding them untracked (a dict is tracked once it holds a
/// tracked object), so the collections a result's ten thousand dicts would trigger do
/// not scan a million entries.
fn untracked(tuple: Bound<'_, PyTuple>) -> Bound<'_, PyTuple> {
    // SAFETY: `tuple` is a live, GC-tracked tuple we just made and hold.
    unsafe { ffi::PyObject_GC_UnTrack(tuple.as_ptr().cast()) };
    tuple
}
