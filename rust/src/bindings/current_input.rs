//! Reading a current target assignment (`{member_id: {topic: partitions}}`) from
//! Python into a member's claims, as `_core.assign_server` takes it.
//!
//! A current target is mostly a previous result passed back, and at 10,000 members x
//! 1M partitions reading its million ints was most of a recomputation after one member
//! left. Two things make that cheaper without changing what is read: a result's
//! partition tuples are shared (uniform's fresh target holds ten distinct ones), so a
//! long tuple is read once per call and remembered by address; and claims read in
//! ascending order go to the model as dense ids ([`MemberSpec::held`]) rather than as
//! (topic, partition) pairs it would convert, check and de-duplicate again.

use super::assign_input::as_dict;
use super::errors::{invalid_input, py_repr};
use crate::assign::model::{DenseId, MemberSpec, ModelBuilder, TopicId};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString, PyTuple};
use rustc_hash::FxHashMap;

/// Tuples this long or longer are remembered; a look-up costs about what reading a
/// few ints does, so shorter ones are read each time.
const REMEMBER_MIN: usize = 8;

/// Reads members' parts of one `current`, remembering long tuples for the call.
pub struct CurrentReader<'py> {
    /// topic id by the address of the caller's topic name objects (which results use
    /// as keys, so `current` mostly does too), held by the caller while this reads
    topics: FxHashMap<usize, TopicId>,
    /// tuple address -> index in `tuples`
    by_address: FxHashMap<usize, usize>,
    /// each remembered tuple, held so that no other tuple can take its address while
    /// this reader lives (Python code may run between members), with its numbers and
    /// whether they are strictly ascending
    tuples: Vec<(Bound<'py, PyTuple>, Vec<i32>, bool)>,
}

impl<'py> CurrentReader<'py> {
    /// `names[t]`: the caller's str object for topic `t`, alive while this reads.
    pub fn new(names: &[Bound<'py, PyString>]) -> Self {
        Self {
            topics: names
                .iter()
                .enumerate()
                .map(|(t, name)| (name.as_ptr() as usize, t as TopicId))
                .collect(),
            by_address: FxHashMap::default(),
            tuples: Vec::new(),
        }
    }

    /// One member's part of `current`: {topic: partitions}, into `spec` (`held` when
    /// the claims come in ascending (topic, partition) order, the order results are
    /// built in; `owned` otherwise). Unknown topics and partitions out of range are
    /// ignored (topics get deleted, partitions never shrink); what is not a partition
    /// number is refused as the reference (`_held` in assignors/server.py) refuses it.
    pub fn read(
        &mut self,
        builder: &ModelBuilder,
        member_id: &Bound<'py, PyString>,
        held: &Bound<'py, PyAny>,
        spec: &mut MemberSpec,
    ) -> PyResult<()> {
        let py = held.py();
        let held = as_dict(held, "current assignments")?;
        let mut claims = Claims {
            dense: Vec::new(),
            ascending: true,
        };
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
            let t = match self.topics.get(&(topic.as_ptr() as usize)) {
                Some(&t) => Some(t),
                None => builder.topic_id(topic.to_str()?),
            };
            let range = t.map(|t| builder.partitions_of(t));
            let refuse = |partition: &Bound<'_, PyAny>| {
                invalid_input(
                    py,
                    format!(
                        "partitions of {} in current must be int32, got {} in topic {}",
                        py_repr(member_id.as_any()),
                        py_repr(partition),
                        py_repr(topic.as_any())
                    ),
                )
            };
            let checked = |partition: &Bound<'_, PyAny>| -> PyResult<i32> {
                let number = if partition.is_instance_of::<PyBool>() {
                    None
                } else {
                    partition.extract::<i32>().ok()
                };
                number.ok_or_else(|| refuse(partition))
            };
            // sized once: a million pushes through doublings touch twice the memory
            claims.dense.reserve(partitions.len().unwrap_or(0));
            let Ok(tuple) = partitions.cast::<PyTuple>() else {
                for partition in partitions.try_iter()? {
                    let number = checked(&partition?)?;
                    claims.push(range.clone(), number);
                }
                continue;
            };
            if tuple.len() >= REMEMBER_MIN {
                let (_, numbers, ascending) = self.remembered(tuple, checked)?;
                claims.extend(range, numbers, *ascending);
                continue;
            }
            // read without new references, exact ints without PyO3's conversion
            for partition in tuple.iter_borrowed() {
                let number = match exact_int32(&partition) {
                    Some(number) => number,
                    None => checked(&partition.to_owned())?,
                };
                claims.push(range.clone(), number);
            }
        }
        claims.into_spec(builder, spec);
        Ok(())
    }

    /// `tuple`'s numbers, read the first time it is seen.
    fn remembered(
        &mut self,
        tuple: &Bound<'py, PyTuple>,
        checked: impl Fn(&Bound<'_, PyAny>) -> PyResult<i32>,
    ) -> PyResult<&(Bound<'py, PyTuple>, Vec<i32>, bool)> {
        let address = tuple.as_ptr() as usize;
        if let Some(&i) = self.by_address.get(&address) {
            return Ok(&self.tuples[i]);
        }
        let mut numbers = Vec::with_capacity(tuple.len());
        for partition in tuple.iter_borrowed() {
            numbers.push(match exact_int32(&partition) {
                Some(number) => number,
                None => checked(&partition.to_owned())?,
            });
        }
        let ascending = numbers.windows(2).all(|w| w[0] < w[1]);
        self.by_address.insert(address, self.tuples.len());
        self.tuples.push((tuple.clone(), numbers, ascending));
        Ok(self.tuples.last().expect("just pushed"))
    }
}

/// One member's valid claims as dense ids, in the order read.
struct Claims {
    dense: Vec<DenseId>,
    /// whether `dense` is strictly ascending so far
    ascending: bool,
}

impl Claims {
    /// Partition `number` of the topic whose dense ids are `range` (`None`: unknown).
    #[inline]
    fn push(&mut self, range: Option<std::ops::Range<DenseId>>, number: i32) {
        let Some(range) = range else { return };
        let Ok(offset) = DenseId::try_from(number) else {
            return;
        };
        if offset >= range.end - range.start {
            return;
        }
        let p = range.start + offset;
        self.ascending &= self.dense.last().is_none_or(|&last| last < p);
        self.dense.push(p);
    }

    /// [`Self::push`] of each of `numbers` (`ascending`: strictly ascending), the
    /// usual case of ascending numbers all in range copied in one go.
    fn extend(
        &mut self,
        range: Option<std::ops::Range<DenseId>>,
        numbers: &[i32],
        ascending: bool,
    ) {
        let Some(range) = range else { return };
        let in_range = |n: i32| DenseId::try_from(n).is_ok_and(|o| o < range.end - range.start);
        match (numbers.first(), numbers.last()) {
            (Some(&first), Some(&last)) if ascending && in_range(first) && in_range(last) => {
                let p = range.start + first as DenseId;
                self.ascending &= self.dense.last().is_none_or(|&l| l < p);
                self.dense
                    .extend(numbers.iter().map(|&n| range.start + n as DenseId));
            }
            _ => {
                for &n in numbers {
                    self.push(Some(range.clone()), n);
                }
            }
        }
    }

    fn into_spec(self, builder: &ModelBuilder, spec: &mut MemberSpec) {
        if self.ascending {
            spec.held = self.dense;
            return;
        }
        // in the order read, as pairs the model de-duplicates (first claim kept)
        spec.owned = self
            .dense
            .iter()
            .map(|&p| {
                let t = builder.topic_of(p);
                (t, i64::from(p - builder.partitions_of(t).start))
            })
            .collect();
    }
}

/// An exact `int` that fits an int32, read without PyO3's conversion machinery; `None`
/// for anything else (bools, other types, big ints), which the checked path then judges.
fn exact_int32(obj: &Borrowed<'_, '_, PyAny>) -> Option<i32> {
    // SAFETY: `obj` is a live object; PyLong_AsLongAndOverflow on an exact int reports
    // overflow through `overflow` and never raises.
    unsafe {
        if ffi::PyLong_CheckExact(obj.as_ptr()) == 0 {
            return None;
        }
        let mut overflow = 0;
        let value = ffi::PyLong_AsLongAndOverflow(obj.as_ptr(), &mut overflow);
        if overflow != 0 {
            return None;
        }
        i32::try_from(value).ok()
    }
}
