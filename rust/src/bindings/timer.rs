//! Python bindings of the timer wheel and the member expiry table:
//! `TimerWheel`, `MemberExpiry`, `Expired` and the kind constants `SESSION`, `JOIN`, `SYNC`.
//!
//! Conversions are written against the raw C API where it matters for batches: a list of
//! ints or strs is read with one borrowed `PyList_GetItem` per element (no iterator
//! objects), an 8-byte integer buffer (`array('q')`, `array('Q')`, a memoryview or a numpy
//! int64/uint64 array) is copied in one go, and the str -> UTF-8 view is CPython's cached
//! one. Every batch is converted and validated in full before anything is changed, so a
//! bad element leaves the wheel or table untouched.

use std::fmt;
use std::sync::Arc;

use pyo3::buffer::{ElementType, PyUntypedBuffer};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyList, PyString, PyTuple};

use super::group_memo::GroupMemo;
use crate::expiry::{self, ExpiryError, Kind, MemberExpiry, StaleHandle};
use crate::timer::{Deadlines, Fired, TimeWentBackwards, TimerWheel};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TimerWheelPy>()?;
    m.add_class::<MemberExpiryPy>()?;
    m.add_class::<ExpiredPy>()?;
    m.add("SESSION", Kind::Session.name())?;
    m.add("JOIN", Kind::Join.name())?;
    m.add("SYNC", Kind::Sync.name())?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Argument conversion
// ---------------------------------------------------------------------------------------

/// Names an argument, or an element of one, in error messages ("keys[3]").
#[derive(Clone, Copy)]
enum Arg<'a> {
    Name(&'a str),
    Item(&'a str, usize),
}

impl fmt::Display for Arg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Name(n) => f.write_str(n),
            Arg::Item(n, i) => write!(f, "{n}[{i}]"),
        }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// `obj` as an int object: ints (and subclasses) as they are, anything with `__index__`
/// (numpy integers) through it; bools and everything else are a TypeError.
fn as_int<'py>(obj: &Bound<'py, PyAny>, arg: Arg<'_>) -> PyResult<Bound<'py, PyAny>> {
    let p = obj.as_ptr();
    // SAFETY: type checks on a valid object pointer.
    unsafe {
        if ffi::PyBool_Check(p) != 0 {
            return Err(PyTypeError::new_err(format!(
                "{arg} must be an int, not bool"
            )));
        }
        if ffi::PyLong_Check(p) != 0 {
            return Ok(obj.clone());
        }
        if ffi::PyIndex_Check(p) != 0 {
            let r = ffi::PyNumber_Index(p);
            if !r.is_null() {
                return Ok(Bound::from_owned_ptr(obj.py(), r));
            }
            PyErr::fetch(obj.py());
        }
    }
    Err(PyTypeError::new_err(format!(
        "{arg} must be an int, not {}",
        type_name(obj)
    )))
}

/// The value of a Python int as an i128 if it fits one (every valid key and ms value does),
/// else None. `int` must be an int object.
fn int_value(int: &Bound<'_, PyAny>) -> Option<i128> {
    let mut overflow = 0;
    // SAFETY: `int` is an int object; with an overflow flag this call cannot fail.
    let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(int.as_ptr(), &mut overflow) };
    match overflow {
        0 => Some(i128::from(v)),
        1 => {
            // SAFETY: as above; fails (OverflowError) only at or above 2^64.
            let u = unsafe { ffi::PyLong_AsUnsignedLongLong(int.as_ptr()) };
            if u == u64::MAX && PyErr::take(int.py()).is_some() {
                None
            } else {
                Some(i128::from(u))
            }
        }
        _ => None,
    }
}

#[inline]
fn fast_i64(obj: &Bound<'_, PyAny>) -> Option<i64> {
    let p = obj.as_ptr();
    // SAFETY: exact-int check, then a conversion that reports overflow by flag.
    unsafe {
        if ffi::PyLong_CheckExact(p) == 0 {
            return None;
        }
        let mut overflow = 0;
        let v = ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow);
        (overflow == 0).then_some(v)
    }
}

/// A key: an int in [0, 2^64).
#[inline]
fn to_key(obj: &Bound<'_, PyAny>, arg: Arg<'_>) -> PyResult<u64> {
    if let Some(v) = fast_i64(obj) {
        if v >= 0 {
            return Ok(v as u64);
        }
    }
    let int = as_int(obj, arg)?;
    match int_value(&int) {
        Some(v) if (0..=i128::from(u64::MAX)).contains(&v) => Ok(v as u64),
        _ => Err(PyValueError::new_err(format!(
            "{arg} must be a non-negative integer below 2**64, got {}",
            int.str()?
        ))),
    }
}

/// A millisecond value: an int in [-2^63, 2^63).
#[inline]
fn to_ms(obj: &Bound<'_, PyAny>, arg: Arg<'_>) -> PyResult<i64> {
    if let Some(v) = fast_i64(obj) {
        return Ok(v);
    }
    let int = as_int(obj, arg)?;
    match int_value(&int) {
        Some(v) if i64::try_from(v).is_ok() => Ok(v as i64),
        _ => Err(PyValueError::new_err(format!(
            "{arg} must fit in a signed 64-bit integer (milliseconds), got {}",
            int.str()?
        ))),
    }
}

/// How many elements ahead `for_each_item` prefetches objects.
const ITEM_AHEAD: usize = 8;

/// Starts loading the first two cache lines of a Python object (header and, for a short
/// str, its characters): elements of a big batch are scattered over the heap, and their
/// misses overlap only if requested ahead. A hint: never dereferences `p`.
#[inline]
fn prefetch_object(p: *mut ffi::PyObject) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch instructions never fault, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = p.cast::<i8>();
        _mm_prefetch::<_MM_HINT_T0>(p);
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Calls `f(index, item)` for every element of a list, tuple or other iterable; lists and
/// tuples are read by index with borrowed references (no iterator, no per-item refcount
/// churn beyond the `Bound` handed to `f`). Returns the number of elements.
fn for_each_item<'py>(
    obj: &Bound<'py, PyAny>,
    what: &str,
    mut f: impl FnMut(usize, &Bound<'py, PyAny>) -> PyResult<()>,
) -> PyResult<usize> {
    let py = obj.py();
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a sequence, not a single {}",
            type_name(obj)
        )));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        // Re-read the length every step: `f` may run Python code (`__index__`) that
        // changes the list, and PyList_GetItem is bounds-checked anyway.
        let mut i = 0;
        loop {
            let len = list.len();
            if i >= len {
                return Ok(i);
            }
            // SAFETY: indices are checked against the current length; a borrowed item is
            // turned into an owned Bound before any other Python code can run, and the one
            // ahead is only prefetched (never dereferenced here).
            let item = unsafe {
                if i + ITEM_AHEAD < len {
                    prefetch_object(ffi::PyList_GetItem(
                        list.as_ptr(),
                        (i + ITEM_AHEAD) as ffi::Py_ssize_t,
                    ));
                }
                let p = ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t);
                if p.is_null() {
                    return Err(PyErr::fetch(py));
                }
                Bound::from_borrowed_ptr(py, p)
            };
            f(i, &item)?;
            i += 1;
        }
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        let len = tuple.len();
        for i in 0..len {
            // SAFETY: as for lists (a tuple cannot change length).
            let item = unsafe {
                if i + ITEM_AHEAD < len {
                    prefetch_object(ffi::PyTuple_GetItem(
                        tuple.as_ptr(),
                        (i + ITEM_AHEAD) as ffi::Py_ssize_t,
                    ));
                }
                let p = ffi::PyTuple_GetItem(tuple.as_ptr(), i as ffi::Py_ssize_t);
                if p.is_null() {
                    return Err(PyErr::fetch(py));
                }
                Bound::from_borrowed_ptr(py, p)
            };
            f(i, &item)?;
        }
        return Ok(len);
    }
    let iter = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!("{what} must be a sequence, not {}", type_name(obj)))
    })?;
    let mut n = 0;
    for item in iter {
        f(n, &item?)?;
        n += 1;
    }
    Ok(n)
}

/// A one-dimensional buffer of 8-byte integers, copied out; None if `obj` is not one
/// (other formats are read element by element through the sequence protocol instead).
fn int64_buffer(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int64Buffer>> {
    // SAFETY: a type-slot check on a valid object pointer.
    if unsafe { ffi::PyObject_CheckBuffer(obj.as_ptr()) } == 0 {
        return Ok(None);
    }
    let buf = PyUntypedBuffer::get(obj)?;
    if buf.dimensions() != 1 {
        return Ok(None);
    }
    let py = obj.py();
    let element = ElementType::from_format(buf.format());
    if !matches!(
        element,
        ElementType::SignedInteger { bytes: 8 } | ElementType::UnsignedInteger { bytes: 8 }
    ) {
        return Ok(None);
    }
    if buf.item_count() == 0 {
        // An empty buffer may have a dangling, unaligned pointer: nothing to copy.
        return Ok(Some(Int64Buffer::Signed(Vec::new())));
    }
    if buf.buf_ptr().align_offset(8) != 0 {
        // A view at an odd offset (e.g. a cast slice of bytes): element by element instead.
        return Ok(None);
    }
    Ok(match element {
        ElementType::SignedInteger { bytes: 8 } => {
            Some(Int64Buffer::Signed(buf.into_typed::<i64>()?.to_vec(py)?))
        }
        ElementType::UnsignedInteger { bytes: 8 } => {
            Some(Int64Buffer::Unsigned(buf.into_typed::<u64>()?.to_vec(py)?))
        }
        _ => None,
    })
}

enum Int64Buffer {
    Signed(Vec<i64>),
    Unsigned(Vec<u64>),
}

/// Keys from a buffer or sequence of ints.
fn keys_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u64>> {
    match int64_buffer(obj)? {
        Some(Int64Buffer::Unsigned(v)) => Ok(v),
        Some(Int64Buffer::Signed(v)) => {
            if let Some(i) = v.iter().position(|&k| k < 0) {
                return Err(PyValueError::new_err(format!(
                    "{} must be a non-negative integer below 2**64, got {}",
                    Arg::Item(what, i),
                    v[i]
                )));
            }
            Ok(v.into_iter().map(|k| k as u64).collect())
        }
        None => {
            let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
            for_each_item(obj, what, |i, item| {
                out.push(to_key(item, Arg::Item(what, i))?);
                Ok(())
            })?;
            Ok(out)
        }
    }
}

/// Millisecond values from a buffer or sequence of ints.
fn ms_seq(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    match int64_buffer(obj)? {
        Some(Int64Buffer::Signed(v)) => Ok(v),
        Some(Int64Buffer::Unsigned(v)) => {
            if let Some(i) = v.iter().position(|&d| d > i64::MAX as u64) {
                return Err(PyValueError::new_err(format!(
                    "{} must fit in a signed 64-bit integer (milliseconds), got {}",
                    Arg::Item(what, i),
                    v[i]
                )));
            }
            Ok(v.into_iter().map(|d| d as i64).collect())
        }
        None => {
            let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
            for_each_item(obj, what, |i, item| {
                out.push(to_ms(item, Arg::Item(what, i))?);
                Ok(())
            })?;
            Ok(out)
        }
    }
}

/// The constructors' `now_ms`: a newtype so the signature can default to 0 while an
/// explicit `None` is still refused like every other non-int.
struct NowMs(i64);

impl<'a, 'py> FromPyObject<'a, 'py> for NowMs {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        to_ms(&obj, Arg::Name("now_ms")).map(NowMs)
    }
}

/// One int for every element, or one int per element.
enum MsArg {
    Scalar(i64),
    PerItem(Vec<i64>),
}

impl MsArg {
    fn parse(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<MsArg> {
        let p = obj.as_ptr();
        // SAFETY: type checks on a valid object pointer.
        let scalar = unsafe {
            ffi::PyLong_Check(p) != 0
                || ffi::PyBool_Check(p) != 0
                || (ffi::PyIndex_Check(p) != 0 && ffi::PySequence_Check(p) == 0)
        };
        if scalar {
            Ok(MsArg::Scalar(to_ms(obj, Arg::Name(what))?))
        } else {
            Ok(MsArg::PerItem(ms_seq(obj, what)?))
        }
    }

    fn check_len(&self, what: &str, n: usize, of: &str) -> PyResult<()> {
        match self {
            MsArg::PerItem(v) if v.len() != n => Err(PyValueError::new_err(format!(
                "{what} has {} elements but {of} has {n}",
                v.len()
            ))),
            _ => Ok(()),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> i64 {
        match self {
            MsArg::Scalar(v) => *v,
            MsArg::PerItem(v) => v[i],
        }
    }
}

/// `obj` as a list or tuple: itself if it is one, else a new list of its elements, so a
/// generator has run to completion before any element is borrowed.
fn as_list_or_tuple<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyAny>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a sequence, not a single {}",
            type_name(obj)
        )));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return Ok(obj.clone());
    }
    let iter = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!("{what} must be a sequence, not {}", type_name(obj)))
    })?;
    let list = PyList::empty(obj.py());
    for item in iter {
        list.append(item?)?;
    }
    Ok(list.into_any())
}

/// The UTF-8 of every str in a list or tuple, borrowed from the str objects themselves.
///
/// Soundness: the slices point into the str objects (CPython's UTF-8 cache, immutable once
/// made), which the list or tuple keeps alive. They stay valid as long as the sequence is
/// alive and unchanged, i.e. until Python code runs again; callers use them only before
/// that (this build holds the GIL throughout: abi3 has no free-threaded variant). Strs
/// with lone surrogates are encoded into bytes objects owned here.
///
/// Why not hold a reference per element: at a million members the str objects are spread
/// over the heap, and the decref at the end of the batch is one more cache miss each.
#[derive(Default)]
struct StrBatch<'py> {
    owned: Vec<Bound<'py, PyAny>>,
    slices: Vec<(*const u8, usize)>,
}

impl<'py> StrBatch<'py> {
    /// Reads `seq` (a list or tuple, see [`as_list_or_tuple`]).
    fn read(&mut self, seq: &Bound<'py, PyAny>, what: &str) -> PyResult<()> {
        let py = seq.py();
        let is_list = seq.is_instance_of::<PyList>();
        let len = seq.len()?;
        self.slices.reserve(len);
        // SAFETY: indices are below the length of a sequence no Python code can change
        // while this runs; items are borrowed references kept alive by the sequence; the
        // item ITEM_AHEAD positions on is only prefetched.
        unsafe {
            let get = |i: usize| {
                if is_list {
                    ffi::PyList_GetItem(seq.as_ptr(), i as ffi::Py_ssize_t)
                } else {
                    ffi::PyTuple_GetItem(seq.as_ptr(), i as ffi::Py_ssize_t)
                }
            };
            for i in 0..len {
                if i + ITEM_AHEAD < len {
                    prefetch_object(get(i + ITEM_AHEAD));
                }
                let p = get(i);
                if p.is_null() {
                    return Err(PyErr::fetch(py));
                }
                if ffi::PyUnicode_Check(p) == 0 {
                    let item = Bound::from_borrowed_ptr(py, p);
                    return Err(PyTypeError::new_err(format!(
                        "{}[{i}] must be a str, not {}",
                        what,
                        type_name(&item)
                    )));
                }
                let mut size: ffi::Py_ssize_t = 0;
                let data = ffi::PyUnicode_AsUTF8AndSize(p, &mut size);
                if !data.is_null() {
                    self.slices.push((data.cast(), size as usize));
                    continue;
                }
                // Not valid UTF-8 (lone surrogates): clear that error, encode with
                // surrogatepass into an owned bytes object instead.
                drop(PyErr::take(py));
                let item = Bound::from_borrowed_ptr(py, p);
                let bytes = utf8(&item, Arg::Item(what, i))?;
                self.slices.push((bytes.ptr, bytes.len));
                self.owned.push(bytes._owner);
            }
        }
        Ok(())
    }

    fn len(&self) -> usize {
        self.slices.len()
    }

    #[inline]
    fn get(&self, i: usize) -> &[u8] {
        let (p, len) = self.slices[i];
        // SAFETY: see the type's documentation.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

/// The UTF-8 bytes of a `str`, kept alive by a reference to their owner. CPython caches a
/// str's UTF-8 form inside the object, so for the usual ASCII ids this copies nothing.
/// Strs with lone surrogates (not valid UTF-8) are encoded with `surrogatepass`, so every
/// `str` is accepted and round-trips, and bytewise order stays code point order.
struct Utf8<'py> {
    _owner: Bound<'py, PyAny>,
    ptr: *const u8,
    len: usize,
}

impl Utf8<'_> {
    #[inline]
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` is the immutable UTF-8 cache of the str (or the payload of
        // the bytes object) held alive by `_owner`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

#[inline]
fn utf8<'py>(obj: &Bound<'py, PyAny>, arg: Arg<'_>) -> PyResult<Utf8<'py>> {
    let py = obj.py();
    let p = obj.as_ptr();
    // SAFETY: type check, then CPython's UTF-8 view of a str (NULL + exception on failure).
    unsafe {
        if ffi::PyUnicode_Check(p) == 0 {
            return Err(PyTypeError::new_err(format!(
                "{arg} must be a str, not {}",
                type_name(obj)
            )));
        }
        let mut size: ffi::Py_ssize_t = 0;
        let data = ffi::PyUnicode_AsUTF8AndSize(p, &mut size);
        if !data.is_null() {
            return Ok(Utf8 {
                _owner: obj.clone(),
                ptr: data.cast(),
                len: size as usize,
            });
        }
        PyErr::fetch(py);
        let encoded =
            ffi::PyUnicode_AsEncodedString(p, c"utf-8".as_ptr(), c"surrogatepass".as_ptr());
        if encoded.is_null() {
            return Err(PyErr::fetch(py));
        }
        let encoded = Bound::from_owned_ptr(py, encoded);
        let mut buf: *mut std::os::raw::c_char = std::ptr::null_mut();
        let mut size: ffi::Py_ssize_t = 0;
        if ffi::PyBytes_AsStringAndSize(encoded.as_ptr(), &mut buf, &mut size) != 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(Utf8 {
            _owner: encoded,
            ptr: buf.cast(),
            len: size as usize,
        })
    }
}

/// Bytes from the table back to a `str` (the inverse of [`utf8`]).
fn to_str<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: decoding a byte range we own; NULL + exception on failure.
    unsafe {
        let s = ffi::PyUnicode_DecodeUTF8(
            bytes.as_ptr().cast(),
            bytes.len() as ffi::Py_ssize_t,
            c"surrogatepass".as_ptr(),
        );
        if s.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, s).cast_into_unchecked())
    }
}

fn kind_arg(obj: &Bound<'_, PyAny>) -> PyResult<Kind> {
    let s = obj.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "kind must be one of 'session', 'join', 'sync' (str), not {}",
            type_name(obj)
        ))
    })?;
    let name = s.to_cow()?;
    match Kind::from_name(&name) {
        Some(kind) => Ok(kind),
        None => Err(PyValueError::new_err(format!(
            "kind must be one of 'session', 'join', 'sync', got {}",
            s.repr()?
        ))),
    }
}

fn kind_str(py: Python<'_>, kind: Kind) -> Bound<'_, PyString> {
    match kind {
        Kind::Session => pyo3::intern!(py, "session").clone(),
        Kind::Join => pyo3::intern!(py, "join").clone(),
        Kind::Sync => pyo3::intern!(py, "sync").clone(),
    }
}

fn backwards(e: TimeWentBackwards) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn expiry_err(e: ExpiryError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// KeyError for a handle that names no live member; `batch` names the argument of a batch
/// call, whose element is then given by index.
fn stale_err(e: StaleHandle, batch: Option<&str>) -> PyErr {
    let message = format!(
        "{} is not a live handle: its member has no pending deadline (it expired, was \
         cleared or its group was removed), or it was never issued",
        e.handle
    );
    PyKeyError::new_err(match batch {
        Some(what) => format!("{}: {message}", Arg::Item(what, e.index)),
        None => message,
    })
}

// ---------------------------------------------------------------------------------------
// TimerWheel
// ---------------------------------------------------------------------------------------

/// A hierarchical timing wheel of integer keys (member handles) with int64 millisecond
/// deadlines; see groupcoord._core.pyi for the full contract.
#[pyclass(name = "TimerWheel", module = "groupcoord._core")]
pub struct TimerWheelPy {
    wheel: TimerWheel,
    fired: Vec<Fired>,
}

#[pymethods]
impl TimerWheelPy {
    #[new]
    #[pyo3(signature = (now_ms = NowMs(0)), text_signature = "(now_ms=0)")]
    fn new(now_ms: NowMs) -> Self {
        let now = now_ms.0;
        TimerWheelPy {
            wheel: TimerWheel::new(now),
            fired: Vec::new(),
        }
    }

    /// The wheel's current time: the last `now_ms` given to `advance` (or the constructor).
    #[getter]
    fn now_ms(&self) -> i64 {
        self.wheel.now_ms()
    }

    /// Schedules `key` for `deadline_ms`, replacing its previous deadline. O(1).
    fn schedule(&mut self, key: &Bound<'_, PyAny>, deadline_ms: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = to_key(key, Arg::Name("key"))?;
        let d = to_ms(deadline_ms, Arg::Name("deadline_ms"))?;
        self.wheel.schedule(k, d);
        Ok(())
    }

    /// Schedules every key of `keys` (a sequence or 8-byte integer buffer) for
    /// `deadline_ms` (an int for all, or a parallel sequence/buffer). Atomic.
    fn schedule_many(
        &mut self,
        keys: &Bound<'_, PyAny>,
        deadline_ms: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let keys = keys_arg(keys, "keys")?;
        let deadlines = MsArg::parse(deadline_ms, "deadline_ms")?;
        deadlines.check_len("deadline_ms", keys.len(), "keys")?;
        let deadlines = match &deadlines {
            MsArg::Scalar(d) => Deadlines::All(*d),
            MsArg::PerItem(ds) => Deadlines::Each(ds),
        };
        self.wheel.schedule_many(&keys, deadlines);
        Ok(())
    }

    /// Unschedules `key`; returns whether it was scheduled. O(1).
    fn cancel(&mut self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.wheel.cancel(to_key(key, Arg::Name("key"))?))
    }

    /// Unschedules every key of `keys`; returns how many were scheduled. Atomic.
    fn cancel_many(&mut self, keys: &Bound<'_, PyAny>) -> PyResult<usize> {
        let keys = keys_arg(keys, "keys")?;
        Ok(keys.into_iter().filter(|&k| self.wheel.cancel(k)).count())
    }

    /// Moves time to `now_ms`; returns the keys with deadline <= now_ms, ordered by
    /// (deadline, key), and forgets them.
    fn advance<'py>(
        &mut self,
        py: Python<'py>,
        now_ms: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let now = to_ms(now_ms, Arg::Name("now_ms"))?;
        self.fired.clear();
        self.wheel
            .advance(now, &mut self.fired)
            .map_err(backwards)?;
        PyList::new(py, self.fired.iter().map(|f| f.key))
    }

    /// The deadline of `key`, or None if it is not scheduled.
    fn deadline(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
        Ok(self.wheel.deadline(to_key(key, Arg::Name("key"))?))
    }

    /// The earliest scheduled deadline (exact), or None if nothing is scheduled.
    fn next_deadline(&mut self) -> Option<i64> {
        self.wheel.next_deadline()
    }

    fn __len__(&self) -> usize {
        self.wheel.len()
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let int = as_int(key, Arg::Name("key"))?;
        Ok(match int_value(&int) {
            Some(v) if (0..=i128::from(u64::MAX)).contains(&v) => self.wheel.contains(v as u64),
            _ => false,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "TimerWheel(now_ms={}, scheduled={})",
            self.wheel.now_ms(),
            self.wheel.len()
        )
    }
}

// ---------------------------------------------------------------------------------------
// Expired
// ---------------------------------------------------------------------------------------

/// One missed deadline: `Expired(group, member, kind, deadline_ms)`. Immutable; behaves as
/// the 4-tuple `(group, member, kind, deadline_ms)` for iteration, indexing, equality,
/// ordering and hashing (so it compares equal to the reference's NamedTuple).
#[pyclass(name = "Expired", module = "groupcoord._core", frozen)]
pub struct ExpiredPy {
    #[pyo3(get)]
    group: Py<PyString>,
    #[pyo3(get)]
    member: Py<PyString>,
    #[pyo3(get)]
    kind: Py<PyString>,
    #[pyo3(get)]
    deadline_ms: i64,
}

impl ExpiredPy {
    fn as_tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                self.group.bind(py).as_any().clone(),
                self.member.bind(py).as_any().clone(),
                self.kind.bind(py).as_any().clone(),
                self.deadline_ms.into_pyobject(py)?.into_any(),
            ],
        )
    }
}

#[pymethods]
impl ExpiredPy {
    #[new]
    fn new(
        group: &Bound<'_, PyAny>,
        member: &Bound<'_, PyAny>,
        kind: &Bound<'_, PyAny>,
        deadline_ms: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let py = group.py();
        let str_arg = |obj: &Bound<'_, PyAny>, name: &str| -> PyResult<Py<PyString>> {
            obj.cast::<PyString>()
                .map(|s| s.clone().unbind())
                .map_err(|_| {
                    PyTypeError::new_err(format!("{name} must be a str, not {}", type_name(obj)))
                })
        };
        Ok(ExpiredPy {
            group: str_arg(group, "group")?,
            member: str_arg(member, "member")?,
            kind: kind_str(py, kind_arg(kind)?).unbind(),
            deadline_ms: to_ms(deadline_ms, Arg::Name("deadline_ms"))?,
        })
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str, &'static str) {
        ("group", "member", "kind", "deadline_ms")
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Expired(group={}, member={}, kind={}, deadline_ms={})",
            self.group.bind(py).repr()?,
            self.member.bind(py).repr()?,
            self.kind.bind(py).repr()?,
            self.deadline_ms
        ))
    }

    fn __len__(&self) -> usize {
        4
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        index: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.as_tuple(py)?.as_any().get_item(index)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.as_tuple(py)?.as_any().try_iter()?.into_any())
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.as_tuple(py)?.hash()
    }

    fn __richcmp__<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let other = if let Ok(e) = other.cast::<ExpiredPy>() {
            e.get().as_tuple(py)?.into_any()
        } else if other.is_instance_of::<PyTuple>() {
            other.clone()
        } else {
            return Ok(py.NotImplemented());
        };
        Ok(self.as_tuple(py)?.rich_compare(other, op)?.unbind())
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        Ok((slf.get_type().into_any(), slf.get().as_tuple(slf.py())?))
    }
}

/// Takes an `Expired` out of the cyclic garbage collector's sight.
///
/// Why: PyO3 makes every pyclass GC-tracked, and an expiry scan creates thousands of
/// `Expired` per call. Tracked survivors are promoted and make CPython run full
/// collections, whose cost is the size of the whole heap (measured: half the time of a
/// 10,000-member expiry in a process holding a million-member plan). An `Expired` holds
/// only strs and an int, so it can never be part of a reference cycle: untracking it is
/// what CPython itself does for tuples of atomic objects.
fn untrack(obj: &Bound<'_, ExpiredPy>) {
    // SAFETY: a live object of a GC type; untracking never frees, and PyO3's dealloc
    // untracks again only if still tracked.
    unsafe { ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) }
}

// ---------------------------------------------------------------------------------------
// MemberExpiry
// ---------------------------------------------------------------------------------------

/// Per-(group, member) SESSION / JOIN / SYNC deadlines; see groupcoord._core.pyi.
#[pyclass(name = "MemberExpiry", module = "groupcoord._core")]
pub struct MemberExpiryPy {
    table: MemberExpiry,
    out: Vec<expiry::Expired>,
    /// `heartbeat_many`'s group handles by `str` address, kept across calls.
    memo: GroupMemo,
}

impl MemberExpiryPy {
    /// The native shell (`super::net_shell`): session refreshes of heartbeats it answered,
    /// applied where they move a live member's SESSION deadline later. Returns how many.
    pub(crate) fn apply_refreshes(
        &mut self,
        refreshes: &[crate::net::fast_heartbeats::Refresh],
    ) -> usize {
        let mut applied = 0;
        for r in refreshes {
            let current = self
                .table
                .deadline(&r.group_id, &r.member_id, Kind::Session);
            if current.is_some_and(|d| d < r.deadline_ms)
                && self
                    .table
                    .set_deadline_by_handle(r.handle, Kind::Session, r.deadline_ms)
                    .is_ok()
            {
                applied += 1;
            }
        }
        applied
    }

    /// The simulator's processing lane (`super::lane_set`): a heartbeat of a member known to
    /// be current, by its handle, at `now`, as `GroupCoordinator.quiet_heartbeat` takes it:
    /// declined (`false`, nothing changed) when a deadline is due by `now` (the coordinator
    /// would act on it first) or the handle is stale.
    pub(crate) fn lane_heartbeat(
        &mut self,
        handle: u64,
        now: i64,
        session_timeout_ms: i64,
    ) -> bool {
        if self.table.next_deadline().is_some_and(|due| due <= now) {
            return false;
        }
        let Ok(deadline) = expiry::session_deadline(now, session_timeout_ms) else {
            return false;
        };
        self.table
            .set_deadline_by_handle(handle, Kind::Session, deadline)
            .is_ok()
    }
}

#[pymethods]
impl MemberExpiryPy {
    #[new]
    #[pyo3(signature = (now_ms = NowMs(0)), text_signature = "(now_ms=0)")]
    fn new(now_ms: NowMs) -> Self {
        let now = now_ms.0;
        MemberExpiryPy {
            table: MemberExpiry::new(now),
            out: Vec::new(),
            memo: GroupMemo::default(),
        }
    }

    /// The table's current time: the last `now_ms` given to `expire` (or the constructor).
    #[getter]
    fn now_ms(&self) -> i64 {
        self.table.now_ms()
    }

    /// Members with at least one pending deadline.
    #[getter]
    fn member_count(&self) -> usize {
        self.table.member_count()
    }

    /// Groups with at least one such member.
    #[getter]
    fn group_count(&self) -> usize {
        self.table.group_count()
    }

    /// A heartbeat received at `now_ms`: SESSION deadline = now_ms + session_timeout_ms.
    fn heartbeat(
        &mut self,
        group: &Bound<'_, PyAny>,
        member: &Bound<'_, PyAny>,
        now_ms: &Bound<'_, PyAny>,
        session_timeout_ms: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let g = utf8(group, Arg::Name("group"))?;
        let m = utf8(member, Arg::Name("member"))?;
        let now = to_ms(now_ms, Arg::Name("now_ms"))?;
        let timeout = to_ms(session_timeout_ms, Arg::Name("session_timeout_ms"))?;
        self.table
            .heartbeat(g.bytes(), m.bytes(), now, timeout)
            .map_err(expiry_err)
    }

    /// Many heartbeats received at `now_ms` in one call. `groups` is one str for all
    /// members or a sequence parallel to `members`; `session_timeout_ms` is one int or a
    /// parallel sequence/buffer. Atomic: validated in full before anything changes.
    fn heartbeat_many(
        &mut self,
        groups: &Bound<'_, PyAny>,
        members: &Bound<'_, PyAny>,
        now_ms: &Bound<'_, PyAny>,
        session_timeout_ms: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        // Everything that can run Python code (ints' `__index__`, iterating a generator)
        // happens first; from `StrBatch::read` on, no Python code runs until the core call
        // returns, which is what makes borrowing the str objects' UTF-8 sound.
        let now = to_ms(now_ms, Arg::Name("now_ms"))?;
        let timeouts = MsArg::parse(session_timeout_ms, "session_timeout_ms")?;
        let members = as_list_or_tuple(members, "members")?;
        let groups_arg = groups;
        let groups = if groups.is_instance_of::<PyString>() {
            None
        } else {
            Some(as_list_or_tuple(groups, "groups")?)
        };
        let single_group = match &groups {
            None => Some(utf8(groups_arg, Arg::Name("groups"))?),
            Some(_) => None,
        };
        let mut batch = StrBatch::default();
        batch.read(&members, "members")?;
        let n = batch.len();
        let mut group_batch = StrBatch::default();
        if let Some(gs) = &groups {
            group_batch.read(gs, "groups")?;
            if group_batch.len() != n {
                return Err(PyValueError::new_err(format!(
                    "groups has {} elements but members has {n}",
                    group_batch.len()
                )));
            }
        }
        timeouts.check_len("session_timeout_ms", n, "members")?;
        let mut items: Vec<(&[u8], &[u8], i64)> = Vec::with_capacity(n);
        for i in 0..n {
            let d = expiry::session_deadline(now, timeouts.get(i)).map_err(|e| {
                PyValueError::new_err(match timeouts {
                    MsArg::Scalar(_) => e.to_string(),
                    MsArg::PerItem(_) => format!("session_timeout_ms[{i}]: {e}"),
                })
            })?;
            let g = match &single_group {
                Some(g) => g.bytes(),
                None => group_batch.get(i),
            };
            items.push((g, batch.get(i), d));
        }
        self.table
            .set_deadlines_with(Kind::Session, &items, &mut self.memo);
        Ok(())
    }

    /// The member's handle, for `heartbeat_handle(s)`: live while the member has a pending
    /// deadline. KeyError if it has none.
    fn handle(&self, group: &Bound<'_, PyAny>, member: &Bound<'_, PyAny>) -> PyResult<u64> {
        let g = utf8(group, Arg::Name("group"))?;
        let m = utf8(member, Arg::Name("member"))?;
        match self.table.handle(g.bytes(), m.bytes()) {
            Some(h) => Ok(h.0),
            None => Err(PyKeyError::new_err(format!(
                "member {} of group {} has no pending deadline, so no handle",
                member.repr()?,
                group.repr()?
            ))),
        }
    }

    /// `heartbeat` of the member `handle` names, without looking its ids up.
    fn heartbeat_handle(
        &mut self,
        handle: &Bound<'_, PyAny>,
        now_ms: &Bound<'_, PyAny>,
        session_timeout_ms: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let h = to_key(handle, Arg::Name("handle"))?;
        let now = to_ms(now_ms, Arg::Name("now_ms"))?;
        let timeout = to_ms(session_timeout_ms, Arg::Name("session_timeout_ms"))?;
        let deadline = expiry::session_deadline(now, timeout).map_err(expiry_err)?;
        self.table
            .set_deadline_by_handle(h, Kind::Session, deadline)
            .map_err(|e| stale_err(e, None))
    }

    /// Many heartbeats by handle (a sequence or 8-byte integer buffer) at `now_ms`;
    /// `session_timeout_ms` is one int or a parallel sequence/buffer. Atomic.
    fn heartbeat_handles(
        &mut self,
        handles: &Bound<'_, PyAny>,
        now_ms: &Bound<'_, PyAny>,
        session_timeout_ms: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let handles = keys_arg(handles, "handles")?;
        let now = to_ms(now_ms, Arg::Name("now_ms"))?;
        let timeouts = MsArg::parse(session_timeout_ms, "session_timeout_ms")?;
        timeouts.check_len("session_timeout_ms", handles.len(), "handles")?;
        let each: Vec<i64>;
        let deadlines = match &timeouts {
            MsArg::Scalar(t) => {
                Deadlines::All(expiry::session_deadline(now, *t).map_err(expiry_err)?)
            }
            MsArg::PerItem(ts) => {
                each = ts
                    .iter()
                    .enumerate()
                    .map(|(i, &t)| {
                        expiry::session_deadline(now, t).map_err(|e| {
                            PyValueError::new_err(format!("session_timeout_ms[{i}]: {e}"))
                        })
                    })
                    .collect::<PyResult<_>>()?;
                Deadlines::Each(&each)
            }
        };
        self.table
            .set_deadlines_by_handle(Kind::Session, &handles, deadlines)
            .map_err(|e| stale_err(e, Some("handles")))
    }

    /// Sets the member's JOIN deadline (replacing an earlier one).
    fn expect_join(
        &mut self,
        group: &Bound<'_, PyAny>,
        member: &Bound<'_, PyAny>,
        deadline_ms: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.set(group, member, Kind::Join, deadline_ms)
    }

    /// Sets the member's SYNC deadline (replacing an earlier one).
    fn expect_sync(
        &mut self,
        group: &Bound<'_, PyAny>,
        member: &Bound<'_, PyAny>,
        deadline_ms: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.set(group, member, Kind::Sync, deadline_ms)
    }

    /// Clears the member's deadline of `kind`, or all of them if `kind` is None. Returns
    /// whether anything was pending.
    #[pyo3(signature = (group, member, kind = None))]
    fn clear(
        &mut self,
        group: &Bound<'_, PyAny>,
        member: &Bound<'_, PyAny>,
        kind: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let g = utf8(group, Arg::Name("group"))?;
        let m = utf8(member, Arg::Name("member"))?;
        let kind = kind.map(kind_arg).transpose()?;
        Ok(self.table.clear(g.bytes(), m.bytes(), kind))
    }

    /// Drops every deadline of every member of `group`; returns how many members it had.
    fn remove_group(&mut self, group: &Bound<'_, PyAny>) -> PyResult<usize> {
        let g = utf8(group, Arg::Name("group"))?;
        Ok(self.table.remove_group(g.bytes()))
    }

    /// Moves time to `now_ms`; returns every deadline <= now_ms as `Expired`, ordered by
    /// (deadline_ms, group, member, kind), and forgets them.
    fn expire<'py>(
        &mut self,
        py: Python<'py>,
        now_ms: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let now = to_ms(now_ms, Arg::Name("now_ms"))?;
        self.out.clear();
        self.table.expire(now, &mut self.out).map_err(expiry_err)?;
        // Expirations come in runs of one group; share its str object.
        let mut last_group: Option<(Arc<[u8]>, Py<PyString>)> = None;
        let mut items = Vec::with_capacity(self.out.len());
        for e in self.out.drain(..) {
            let group = match &last_group {
                Some((bytes, s)) if Arc::ptr_eq(bytes, &e.group) => s.clone_ref(py),
                _ => {
                    let s = to_str(py, &e.group)?.unbind();
                    last_group = Some((e.group.clone(), s.clone_ref(py)));
                    s
                }
            };
            let expired = ExpiredPy {
                group,
                member: to_str(py, &e.member)?.unbind(),
                kind: kind_str(py, e.kind).unbind(),
                deadline_ms: e.deadline_ms,
            };
            let obj = Bound::new(py, expired)?;
            untrack(&obj);
            items.push(obj);
        }
        PyList::new(py, items)
    }

    /// The member's pending deadline of `kind`, or None.
    fn deadline(
        &self,
        group: &Bound<'_, PyAny>,
        member: &Bound<'_, PyAny>,
        kind: &Bound<'_, PyAny>,
    ) -> PyResult<Option<i64>> {
        let g = utf8(group, Arg::Name("group"))?;
        let m = utf8(member, Arg::Name("member"))?;
        Ok(self.table.deadline(g.bytes(), m.bytes(), kind_arg(kind)?))
    }

    /// The earliest pending deadline (exact), or None.
    fn next_deadline(&mut self) -> Option<i64> {
        self.table.next_deadline()
    }

    /// Number of pending deadlines (0 to 3 per member).
    fn __len__(&self) -> usize {
        self.table.len()
    }

    /// `(group, member) in table`: whether the member has any pending deadline.
    fn __contains__(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let pair = item
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .ok_or_else(|| PyTypeError::new_err("expected a (group, member) tuple"))?;
        let g = utf8(&pair.get_item(0)?, Arg::Name("group"))?;
        let m = utf8(&pair.get_item(1)?, Arg::Name("member"))?;
        Ok(Kind::ALL
            .into_iter()
            .any(|k| self.table.deadline(g.bytes(), m.bytes(), k).is_some()))
    }

    fn __repr__(&self) -> String {
        format!(
            "MemberExpiry(now_ms={}, groups={}, members={}, deadlines={})",
            self.table.now_ms(),
            self.table.group_count(),
            self.table.member_count(),
            self.table.len()
        )
    }
}

impl MemberExpiryPy {
    fn set(
        &mut self,
        group: &Bound<'_, PyAny>,
        member: &Bound<'_, PyAny>,
        kind: Kind,
        deadline_ms: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let g = utf8(group, Arg::Name("group"))?;
        let m = utf8(member, Arg::Name("member"))?;
        let d = to_ms(deadline_ms, Arg::Name("deadline_ms"))?;
        self.table.set_deadline(g.bytes(), m.bytes(), kind, d);
        Ok(())
    }
}
