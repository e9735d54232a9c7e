//! The wheel's time arithmetic: which level and slot a deadline belongs to, where a slot
//! starts and how wide it is. Pure functions of integers, so everything the wheel knows about
//! time can be checked here exhaustively on small domains against naive definitions, apart
//! from the data structure.
/// Bits of the deadline each level resolves. 64 slots per level make a level's occupancy
/// one `u64` bitmap, so "next occupied slot" is a single `trailing_zeros`.
pub const SLOT_BITS: u32 = 6;

/// Slots per level (`2^SLOT_BITS`). Slot `s` of level `l` holds deadlines whose bits
/// `[6l, 6l+6)` equal `s` (within the current rotation of that level, see [`level_for`]).
pub const SLOTS: usize = 1 << SLOT_BITS;

/// Number of levels: `ceil(64 / 6)`, so the wheel spans the full 64-bit time axis.
/// Level `l` has a slot width of `64^l` ticks: level 0 = 1 ms, level 1 = 64 ms,
/// level 2 = 4.096 s, level 3 = 262 s, level 4 = 4.66 h, level 5 = 12.4 days, ...,
/// level 10 = the top 4 bits (only 16 of its slots can ever be used).
pub const LEVELS: usize = 11;

/// The tick: one millisecond. Deadlines are integer milliseconds, so the keys a level-0 slot
/// fires all share one deadline, which is what makes `(deadline, key)` ordering cheap.
pub const TICK_MS: i64 = 1;

/// Maps signed milliseconds to the wheel's unsigned tick axis, preserving order
/// (flipping the sign bit: `i64::MIN` -> 0, `0` -> 2^63, `i64::MAX` -> `u64::MAX`).
#[inline]
pub const fn encode_time(ms: i64) -> u64 {
    (ms as u64) ^ (1 << 63)
}

/// Inverse of [`encode_time`].
#[inline]
pub const fn decode_time(t: u64) -> i64 {
    (t ^ (1 << 63)) as i64
}

/// The level at which a deadline `when` lives while the wheel's time is `elapsed`
/// (requires `when > elapsed`): the level whose 6-bit digit holds the highest bit in which
/// the two differ. All higher digits are equal, so the key is in the current rotation of
/// that level, and its digit there is strictly greater than `elapsed`'s. As `elapsed` grows
/// towards `when` that stays true until `elapsed` reaches the slot's start, which is exactly
/// when `advance` cascades the slot; so a key's level never has to be stored.
#[inline]
pub const fn level_for(elapsed: u64, when: u64) -> usize {
    // `| (SLOTS - 1)` makes differences confined to the lowest digit land on level 0 and
    // keeps the argument of leading_zeros non-zero.
    let masked = (elapsed ^ when) | (SLOTS as u64 - 1);
    let significant = 63 - masked.leading_zeros();
    (significant / SLOT_BITS) as usize
}

/// The slot index of `when` at `level`: its digit `[6l, 6l+6)`.
#[inline]
pub const fn slot_for(when: u64, level: usize) -> usize {
    ((when >> (level as u32 * SLOT_BITS)) & (SLOTS as u64 - 1)) as usize
}

/// First tick of slot `slot` of `level` in the rotation that contains `elapsed`.
#[inline]
pub const fn slot_start(elapsed: u64, level: usize, slot: usize) -> u64 {
    let shift = level as u32 * SLOT_BITS;
    let rotation_bits = shift + SLOT_BITS;
    // The top level's rotation is the whole axis (66 bits > 64), hence no base bits.
    let base = if rotation_bits >= 64 {
        0
    } else {
        elapsed & !((1u64 << rotation_bits) - 1)
    };
    base | ((slot as u64) << shift)
}

/// Width of a slot of `level` in ticks (`64^level`), saturating for the top level.
#[inline]
pub const fn slot_width(level: usize) -> u64 {
    let shift = level as u32 * SLOT_BITS;
    if shift >= 64 {
        u64::MAX
    } else {
        1u64 << shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // --- the pure functions, exhaustively ------------------------------------------------

    /// Naive definition: the lowest level whose rotation (all digits above it) is shared.
    fn naive_level(elapsed: u64, when: u64) -> usize {
        (0..LEVELS)
            .find(|&l| {
                let bits = (l as u32 + 1) * SLOT_BITS;
                bits >= 64 || elapsed >> bits == when >> bits
            })
            .unwrap()
    }

    #[test]
    fn level_for_matches_naive_on_all_small_pairs() {
        // Every pair below 2^13 spans levels 0..=2 with every digit combination.
        for elapsed in 0..1u64 << 13 {
            for when in elapsed + 1..1u64 << 13 {
                assert_eq!(
                    level_for(elapsed, when),
                    naive_level(elapsed, when),
                    "{elapsed} {when}"
                );
            }
        }
    }

    #[test]
    fn level_for_matches_naive_for_every_differing_bit() {
        // For every highest differing bit position and a spread of backgrounds.
        let backgrounds = [
            0u64,
            u64::MAX >> 1,
            0x5555_5555_5555_5555,
            0xdead_beef_0bad_f00d,
            1 << 63,
        ];
        for bg in backgrounds {
            for bit in 0..64 {
                let elapsed = bg & !(1u64 << bit);
                let when = elapsed | (1u64 << bit);
                assert_eq!(level_for(elapsed, when), naive_level(elapsed, when));
                assert_eq!(level_for(elapsed, when), (bit / SLOT_BITS) as usize);
                // Lower bits of `when` below the differing bit do not matter.
                let when2 = when | ((1u64 << bit) - 1);
                assert_eq!(level_for(elapsed, when2), (bit / SLOT_BITS) as usize);
            }
        }
        assert_eq!(level_for(0, u64::MAX), LEVELS - 1);
    }

    #[test]
    fn slot_for_and_slot_start_agree_exhaustively() {
        // Every time below 2^12 at levels 0 and 1, and every slot of every level from
        // several positions: the slot of `slot_start(e, l, s)` at level `l` is `s`, the
        // start is aligned, and `e` and the start share the rotation above level `l`.
        for t in 0..1u64 << 12 {
            for level in 0..2 {
                let s = slot_for(t, level);
                let start = slot_start(t, level, s);
                assert!(start <= t && t - start < slot_width(level), "{t} {level}");
            }
        }
        for e in [0u64, 12345, 1 << 40, u64::MAX - 7, encode_time(0)] {
            for level in 0..LEVELS {
                let usable = if level == LEVELS - 1 { 16 } else { SLOTS };
                for slot in 0..usable {
                    let start = slot_start(e, level, slot);
                    assert_eq!(slot_for(start, level), slot);
                    assert_eq!(start % slot_width(level).max(1), 0, "aligned");
                    if level < LEVELS - 1 {
                        let bits = (level as u32 + 1) * SLOT_BITS;
                        assert_eq!(start >> bits, e >> bits);
                    }
                    if level > 0 {
                        assert_eq!(slot_for(start, level - 1), 0);
                    }
                }
            }
        }
    }

    #[test]
    fn time_encoding_preserves_order_and_round_trips() {
        let samples = [
            i64::MIN,
            i64::MIN + 1,
            -1_000_000,
            -1,
            0,
            1,
            1_700_000_000_000,
            i64::MAX - 1,
            i64::MAX,
        ];
        for w in samples.windows(2) {
            assert!(encode_time(w[0]) < encode_time(w[1]));
        }
        for &s in &samples {
            assert_eq!(decode_time(encode_time(s)), s);
        }
        for ms in -70_000i64..70_000 {
            assert_eq!(decode_time(encode_time(ms)), ms);
            assert_eq!(encode_time(ms) + 1, encode_time(ms + 1));
        }
    }

    proptest! {
        /// The three functions together, on the whole axis: a deadline after the current
        /// time falls inside the slot `level_for` and `slot_for` give it, and that slot is
        /// after the current time's slot of the same level (what `advance` relies on).
        #[test]
        fn a_deadline_lies_in_its_slot_and_after_now(elapsed in any::<u64>(), r in any::<u64>(), shift in 0u32..64) {
            // Distances of every magnitude (a uniform u64 would almost always overflow).
            let when = elapsed.saturating_add((r >> shift).max(1));
            prop_assume!(when > elapsed);
            let level = level_for(elapsed, when);
            prop_assert_eq!(level, naive_level(elapsed, when));
            let slot = slot_for(when, level);
            let start = slot_start(elapsed, level, slot);
            prop_assert!(start <= when, "slot starts after the deadline");
            prop_assert!(when - start < slot_width(level), "deadline past the slot's end");
            prop_assert!(slot > slot_for(elapsed, level), "slot is not after now's slot");
        }

        #[test]
        fn time_encoding_is_an_order_isomorphism(a in any::<i64>(), b in any::<i64>()) {
            prop_assert_eq!(decode_time(encode_time(a)), a);
            prop_assert_eq!(a.cmp(&b), encode_time(a).cmp(&encode_time(b)));
        }
    }
}
