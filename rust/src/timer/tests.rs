//! The wheel's behaviour, against hand-worked examples and against a sorted map as a model.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

// --- behaviour -------------------------------------------------------------------------

fn drain(w: &mut TimerWheel, now: i64) -> Vec<(i64, u64)> {
    let mut out = Vec::new();
    w.advance(now, &mut out).unwrap();
    w.check_invariants().unwrap();
    out.into_iter().map(|f| (f.deadline_ms, f.key)).collect()
}

#[test]
fn fires_in_deadline_then_key_order_exactly_once() {
    let mut w = TimerWheel::new(0);
    for (k, d) in [
        (5u64, 100i64),
        (3, 100),
        (9, 50),
        (1, 5000),
        (2, 1 << 40),
        (7, 100),
    ] {
        w.schedule(k, d);
    }
    w.check_invariants().unwrap();
    assert_eq!(w.next_deadline(), Some(50));
    assert_eq!(drain(&mut w, 99), vec![(50, 9)]);
    assert_eq!(drain(&mut w, 100), vec![(100, 3), (100, 5), (100, 7)]);
    assert_eq!(drain(&mut w, 100), vec![]);
    assert_eq!(w.next_deadline(), Some(5000));
    assert_eq!(drain(&mut w, (1 << 40) - 1), vec![(5000, 1)]);
    assert_eq!(drain(&mut w, i64::MAX), vec![(1 << 40, 2)]);
    assert!(w.is_empty());
    assert_eq!(w.next_deadline(), None);
}

#[test]
fn past_deadlines_fire_on_the_next_advance_before_everything_else() {
    let mut w = TimerWheel::new(1_000);
    w.schedule(1, 2_000);
    w.schedule(2, 1_000); // equal to now: due
    w.schedule(3, -5);
    w.schedule(4, 999);
    assert_eq!(w.next_deadline(), Some(-5));
    assert_eq!(drain(&mut w, 1_000), vec![(-5, 3), (999, 4), (1_000, 2)]);
    assert_eq!(drain(&mut w, 5_000), vec![(2_000, 1)]);
}

#[test]
fn time_cannot_go_backwards() {
    let mut w = TimerWheel::new(10);
    let mut out = Vec::new();
    assert_eq!(
        w.advance(9, &mut out),
        Err(TimeWentBackwards {
            now_ms: 9,
            current_ms: 10
        })
    );
    w.advance(10, &mut out).unwrap();
    assert_eq!(w.now_ms(), 10);
}

#[test]
fn reschedule_moves_earlier_and_later_and_cancel_removes() {
    let mut w = TimerWheel::new(0);
    w.schedule(1, 10_000);
    w.schedule(1, 20);
    assert_eq!(w.deadline(1), Some(20));
    w.schedule(1, 300_000);
    w.schedule(2, 300_001);
    assert_eq!(w.len(), 2);
    assert!(w.cancel(2));
    assert!(!w.cancel(2));
    assert_eq!(drain(&mut w, 299_999), vec![]);
    assert_eq!(drain(&mut w, 300_000), vec![(300_000, 1)]);
    assert!(!w.contains(1));
    // A fired key can be reused.
    w.schedule(1, 300_000);
    assert_eq!(drain(&mut w, 300_000), vec![(300_000, 1)]);
}

#[test]
fn sparse_and_dense_keys_coexist_and_migrate() {
    let mut w = TimerWheel::new(0);
    // Big keys go to the hash map; then many dense keys grow the vector past some of them.
    let big = [u64::MAX, 1 << 40, 70_000, 9_000];
    for (i, &k) in big.iter().enumerate() {
        w.schedule(k, 1_000 + i as i64);
    }
    for k in 0..20_000u64 {
        w.schedule(k, 5_000);
    }
    w.check_invariants().unwrap();
    for (i, &k) in big.iter().enumerate().take(3) {
        assert_eq!(w.deadline(k), Some(1_000 + i as i64), "key {k}");
    }
    assert_eq!(w.deadline(9_000), Some(5_000), "rescheduled as a dense key");
    let fired = drain(&mut w, 5_000);
    assert_eq!(
        fired.len(),
        20_000 + big.len() - 1,
        "9_000 was rescheduled to 5_000"
    );
    assert!(fired.windows(2).all(|p| p[0] < p[1]));
}

#[test]
fn next_deadline_stays_exact_in_a_heartbeat_storm() {
    // All keys far away on a high level: the histogram must follow reschedules.
    let mut w = TimerWheel::new(0);
    let n = 3_000u64;
    for k in 0..n {
        w.schedule(k, 45_000 + k as i64);
    }
    let mut model: BTreeMap<u64, i64> = (0..n).map(|k| (k, 45_000 + k as i64)).collect();
    let mut now = 0;
    for round in 0..60 {
        now += 100;
        let mut out = Vec::new();
        w.advance(now, &mut out).unwrap();
        assert!(out.is_empty());
        for k in (round * 50..round * 50 + 50).map(|k| k % n) {
            w.schedule(k, now + 45_000);
            model.insert(k, now + 45_000);
        }
        assert_eq!(w.next_deadline(), model.values().min().copied());
        if round % 10 == 0 {
            w.check_invariants().unwrap();
        }
    }
}

#[test]
fn later_deadlines_leave_the_key_in_place_until_its_slot_is_reached() {
    let mut w = TimerWheel::new(0);
    w.schedule(1, 45_000); // level 2
    let list = w.nodes[w.index.get(1).unwrap() as usize].list;
    for beat in 1..=14 {
        w.schedule(1, 45_000 + beat * 3_000);
        // Lazy: the node has not moved, only its deadline did.
        assert_eq!(w.nodes[w.index.get(1).unwrap() as usize].list, list);
        w.check_invariants().unwrap();
    }
    // Reaching the old slot moves the key instead of firing it.
    assert_eq!(drain(&mut w, 44_999), vec![]);
    assert_eq!(drain(&mut w, 86_999), vec![]);
    assert_eq!(w.next_deadline(), Some(87_000));
    assert_eq!(drain(&mut w, 87_000), vec![(87_000, 1)]);
    // Moving earlier is never lazy.
    w.schedule(2, 500_000);
    w.schedule(2, 87_001);
    assert_eq!(w.next_deadline(), Some(87_001));
    assert_eq!(drain(&mut w, 87_001), vec![(87_001, 2)]);
}

#[test]
fn next_deadline_settles_lazy_slots_until_it_finds_the_minimum() {
    let mut w = TimerWheel::new(0);
    for k in 0..100u64 {
        w.schedule(k, 10_000 + k as i64);
    }
    // Everybody moves far later except key 50: the earliest slot is mostly lazy keys.
    for k in (0..100u64).filter(|&k| k != 50) {
        w.schedule(k, 900_000 + k as i64);
    }
    assert_eq!(w.next_deadline(), Some(10_050));
    w.check_invariants().unwrap();
    assert!(w.cancel(50));
    assert_eq!(w.next_deadline(), Some(900_000));
    w.check_invariants().unwrap();
}

#[test]
fn extreme_times() {
    let mut w = TimerWheel::new(i64::MIN);
    w.schedule(1, i64::MAX);
    w.schedule(2, i64::MIN);
    w.schedule(3, 0);
    w.check_invariants().unwrap();
    assert_eq!(w.next_deadline(), Some(i64::MIN));
    assert_eq!(drain(&mut w, i64::MIN), vec![(i64::MIN, 2)]);
    assert_eq!(w.next_deadline(), Some(0));
    assert_eq!(drain(&mut w, i64::MAX - 1), vec![(0, 3)]);
    assert_eq!(w.next_deadline(), Some(i64::MAX));
    assert_eq!(drain(&mut w, i64::MAX), vec![(i64::MAX, 1)]);
}

#[test]
fn memory_per_key_is_small() {
    let mut w = TimerWheel::new(0);
    let n = 1_000_000u64;
    w.reserve(n as usize);
    for k in 0..n {
        w.schedule(k, 45_000 + (k % 3_000) as i64);
    }
    let bytes = w.heap_bytes();
    assert!(bytes < 64 << 20, "{bytes} bytes for a million keys");
}

// --- model-based property test ---------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Schedule(u64, i64),
    Cancel(u64),
    Advance(i64),
    NextDeadline,
}

fn key() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..24,
        1 => Just(u64::MAX),
        1 => (1u64 << 33)..(1u64 << 33) + 4,
    ]
}

/// Offsets from the current time: zero, the past, every level boundary, and far futures.
fn offset() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => Just(0i64),
        2 => -100i64..0,
        4 => 1i64..130,
        3 => (0u32..62).prop_flat_map(|b| {
            let p = 1i64 << b;
            (p - 2)..(p + 2)
        }),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (key(), offset()).prop_map(|(k, o)| Op::Schedule(k, o)),
        2 => key().prop_map(Op::Cancel),
        3 => offset().prop_map(|o| Op::Advance(o.max(0))),
        2 => Just(Op::NextDeadline),
    ]
}

proptest! {
    // 512 cases by default; PROPTEST_CASES=100000 for a deeper run.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(512)
    ))]

    #[test]
    fn wheel_matches_a_sorted_map(start in prop_oneof![Just(0i64), Just(i64::MIN), -1_000i64..1_000_000, Just(i64::MAX - 5_000)],
                                  ops in proptest::collection::vec(op(), 1..120)) {
        let mut w = TimerWheel::new(start);
        let mut model: BTreeMap<u64, i64> = BTreeMap::new();
        let mut now = start;
        for op in ops {
            match op {
                Op::Schedule(k, o) => {
                    let d = now.saturating_add(o);
                    w.schedule(k, d);
                    model.insert(k, d);
                }
                Op::Cancel(k) => {
                    prop_assert_eq!(w.cancel(k), model.remove(&k).is_some());
                }
                Op::Advance(o) => {
                    now = now.saturating_add(o);
                    let mut expected: Vec<(i64, u64)> =
                        model.iter().filter(|(_, &d)| d <= now).map(|(&k, &d)| (d, k)).collect();
                    expected.sort();
                    for (_, k) in &expected {
                        model.remove(k);
                    }
                    let mut out = Vec::new();
                    w.advance(now, &mut out).unwrap();
                    let got: Vec<(i64, u64)> = out.iter().map(|f| (f.deadline_ms, f.key)).collect();
                    prop_assert_eq!(got, expected);
                }
                Op::NextDeadline => {
                    prop_assert_eq!(w.next_deadline(), model.values().min().copied());
                }
            }
            prop_assert_eq!(w.len(), model.len());
            if let Err(e) = w.check_invariants() {
                return Err(TestCaseError::fail(e));
            }
            for (&k, &d) in &model {
                prop_assert_eq!(w.deadline(k), Some(d));
            }
        }
    }
}
