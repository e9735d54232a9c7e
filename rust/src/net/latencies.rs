//! A latency histogram kept on the I/O thread, in the buckets of Python's server statistics
//! (`groupcoord.server.stats.LATENCY_BUCKETS_S`), which adds its counts to its own.

/// Latencies counted per bucket (not cumulative; the last bucket is +Inf) and their sum.
#[derive(Debug, Default, Clone)]
pub struct Latencies {
    bounds_s: Vec<f64>,
    pub counts: Vec<u64>,
    pub total_s: f64,
}

impl Latencies {
    pub fn new(bounds_s: Vec<f64>) -> Self {
        Latencies {
            counts: vec![0; bounds_s.len() + 1],
            bounds_s,
            total_s: 0.0,
        }
    }

    /// As Python's `Histogram.observe`: a value equal to a bound is in that bound's bucket.
    pub fn observe(&mut self, seconds: f64) {
        let bucket = self.bounds_s.partition_point(|&b| b < seconds);
        self.counts[bucket] += 1;
        self.total_s += seconds;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_value_on_a_bound_is_in_that_bounds_bucket() {
        let mut l = Latencies::new(vec![0.001, 0.01]);
        for v in [0.0005, 0.001, 0.005, 0.01, 0.5] {
            l.observe(v);
        }
        assert_eq!(l.counts, vec![2, 2, 1]);
        assert!((l.total_s - 0.5165).abs() < 1e-12);
    }

    proptest! {
        /// As Python's `bisect.bisect_left(bounds, value)`: the first bound not below it.
        #[test]
        fn buckets_as_python_bisects(values in prop::collection::vec(0.0f64..2.0, 0..50)) {
            let bounds = vec![0.0001, 0.001, 0.01, 0.1, 1.0];
            let mut l = Latencies::new(bounds.clone());
            let mut want = vec![0u64; bounds.len() + 1];
            for &v in &values {
                l.observe(v);
                want[bounds.iter().position(|&b| v <= b).unwrap_or(bounds.len())] += 1;
            }
            prop_assert_eq!(l.counts, want);
        }
    }
}
