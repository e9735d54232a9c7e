//! The wheel's consistency: a one-line dump of its state, which every `debug_assert!` in
//! the wheel prints, and the full O(n) invariant check the tests run after every step.

use std::collections::HashMap;

use super::{
    decode_time, slot_for, slot_start, TimerWheel, FREE, LEVELS, LISTS, NIL, OVERDUE, SLOTS,
};

impl TimerWheel {
    /// A one-line summary for assertion messages.
    pub fn debug_state(&self) -> String {
        let levels: Vec<String> = (0..LEVELS)
            .filter(|&l| !self.levels[l].is_empty())
            .map(|l| format!("L{l}={:#018x}", self.levels[l].occupied()))
            .collect();
        let tracked: Vec<String> = (0..LEVELS)
            .filter(|&l| self.tracked[l].list != NIL)
            .map(|l| format!("L{l}:{}", self.tracked[l].list as usize % SLOTS))
            .collect();
        format!(
            "TimerWheel {{ now_ms: {}, len: {}, level_mask: {:#06x}, occupied: [{}], tracked: [{}], overdue: {}, nodes: {} }}",
            self.now_ms(),
            self.len,
            self.level_mask,
            levels.join(" "),
            tracked.join(" "),
            !self.overdue.is_empty(),
            self.nodes.len(),
        )
    }

    /// Walks the whole structure and checks every invariant; O(n). For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        let state = || self.debug_state();
        let mut seen = 0usize;
        let mut level_mask = 0u16;
        let mut on_lists = vec![false; self.nodes.len()];
        for list in 0..LISTS as u32 {
            let keys = self.list(list);
            let count = keys.len();
            let mut multiset: HashMap<u64, u32> = HashMap::new();
            let tracked = self.is_tracked(list);
            for (pos, &n) in keys.iter().enumerate() {
                if n as usize >= self.nodes.len()
                    || std::mem::replace(&mut on_lists[n as usize], true)
                {
                    return Err(format!(
                        "list {list}: bad or repeated node {n}; {}",
                        state()
                    ));
                }
                let node = &self.nodes[n as usize];
                let (key, deadline) = (node.key, decode_time(node.when));
                if node.list != list || node.pos as usize != pos {
                    return Err(format!(
                        "list {list}: node {n} at {pos} says list {} pos {}; {}",
                        node.list,
                        node.pos,
                        state()
                    ));
                }
                if list == OVERDUE {
                    if node.when > self.elapsed {
                        return Err(format!(
                            "key {key} (deadline {deadline}) on the overdue list is not due; {}",
                            state()
                        ));
                    }
                } else {
                    let (level, slot) = (list as usize / SLOTS, list as usize % SLOTS);
                    if node.when < slot_start(self.elapsed, level, slot) {
                        return Err(format!(
                            "key {key} (deadline {deadline}) sits on list {list} which starts after it; {}",
                            state()
                        ));
                    }
                    if tracked && self.list_of(node.when) != list {
                        return Err(format!(
                            "key {key} (deadline {deadline}) is lazy on tracked list {list}; {}",
                            state()
                        ));
                    }
                }
                if self.index.get(key) != Some(n) {
                    return Err(format!("key {key} not indexed to node {n}; {}", state()));
                }
                *multiset.entry(node.when).or_default() += 1;
            }
            seen += count;
            let min = multiset.keys().min().copied();
            if list == OVERDUE {
                let c = &self.overdue_min;
                if c.valid && (min != Some(c.min) || multiset.get(&c.min) != Some(&c.count)) {
                    return Err(format!("overdue minimum cache is stale; {}", state()));
                }
                continue;
            }
            let (level, slot) = (list as usize / SLOTS, list as usize % SLOTS);
            let bit = (self.levels[level].occupied() >> slot) & 1 == 1;
            if bit != (count > 0) {
                return Err(format!(
                    "occupancy bit of list {list} is {bit} with {count} keys; {}",
                    state()
                ));
            }
            if count > 0 {
                level_mask |= 1 << level;
                if slot <= slot_for(self.elapsed, level) {
                    return Err(format!(
                        "occupied list {list} is not after the current time; {}",
                        state()
                    ));
                }
            }
            if tracked {
                let t = &self.tracked[level];
                if count == 0 {
                    return Err(format!("tracked list {list} is empty; {}", state()));
                }
                if t.base != slot_start(self.elapsed, level, slot) {
                    return Err(format!("tracked list {list} has a stale base; {}", state()));
                }
                if let Some(h) = t.hist.as_ref() {
                    for (&when, &c) in &multiset {
                        if h.count((when - t.base) as usize) != c {
                            return Err(format!(
                                "histogram of list {list} is wrong at {}; {}",
                                decode_time(when),
                                state()
                            ));
                        }
                    }
                    if h.total() != count {
                        return Err(format!(
                            "histogram of list {list} holds extra keys; {}",
                            state()
                        ));
                    }
                    if h.min().map(|o| t.base + o as u64) != min {
                        return Err(format!(
                            "histogram minimum of list {list} is wrong; {}",
                            state()
                        ));
                    }
                } else if level > 0
                    && (min != Some(t.min) || multiset.get(&t.min) != Some(&t.count))
                {
                    return Err(format!(
                        "minimum of tracked list {list} is stale; {}",
                        state()
                    ));
                }
            }
        }
        for (level, t) in self.tracked.iter().enumerate() {
            if t.list != NIL && t.list as usize / SLOTS != level {
                return Err(format!(
                    "level {level} tracks list {} of another level; {}",
                    t.list,
                    state()
                ));
            }
            if t.list == NIL && t.hist.as_ref().is_some_and(|h| h.total() != 0) {
                return Err(format!(
                    "untracked histogram of level {level} is not clear; {}",
                    state()
                ));
            }
        }
        if level_mask != self.level_mask {
            return Err(format!("level_mask should be {level_mask:#x}; {}", state()));
        }
        if seen != self.len {
            return Err(format!(
                "{seen} keys on lists, len says {}; {}",
                self.len,
                state()
            ));
        }
        let indexed = self.index.count();
        if indexed != self.len {
            return Err(format!(
                "{indexed} keys indexed, len says {}; {}",
                self.len,
                state()
            ));
        }
        let mut free = 0usize;
        let mut n = self.free_head;
        while n != NIL {
            if self.nodes[n as usize].list != FREE {
                return Err(format!(
                    "node {n} on the free list is not marked free; {}",
                    state()
                ));
            }
            free += 1;
            if free > self.nodes.len() {
                return Err(format!("free list has a cycle; {}", state()));
            }
            n = self.nodes[n as usize].pos;
        }
        if self.len + free != self.nodes.len() {
            return Err(format!(
                "{} nodes = {} live + {free} free does not add up; {}",
                self.nodes.len(),
                self.len,
                state()
            ));
        }
        Ok(())
    }
}
