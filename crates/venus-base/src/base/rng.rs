//! A tiny deterministic pseudo-random generator: SplitMix64.
//!
//! Input: a 64-bit seed. Output: a stream of `u64`s that depends on the seed alone (same
//! seed, same stream, on every platform), and a uniform pick of `k` distinct indices out of
//! `n` ([`SplitMix64::choose`]). Used where a scenario asks for "a fraction of the GPUs,
//! spread by a seed" (`slow_gpus 1% 80% 7`): the pick must be reproducible run to run, so no
//! clock, address or hash-map order enters it.
//!
//! The generator is Steele, Lea and Flood, "Fast splittable pseudorandom number generators"
//! (OOPSLA 2014), in the form of Vigna's public-domain reference `splitmix64.c`
//! (https://prng.di.unimi.it/splitmix64.c): add the golden-ratio increment, then mix with two
//! xor-shift-multiply rounds. Not for cryptography.

/// SplitMix64's state: one counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The golden-ratio increment of `splitmix64.c`.
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next value of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in `0..n` (`n > 0`), by Lemire's multiply-shift with rejection, so no
    /// value is favoured by the modulo.
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// `k` distinct indices of `0..n`, uniformly chosen, in increasing order (`k` is capped at
    /// `n`). Floyd's algorithm: `k` draws and O(k) memory, whatever `n` is.
    pub fn choose(&mut self, n: u64, k: u64) -> Vec<u64> {
        let k = k.min(n);
        let mut picked = std::collections::BTreeSet::new();
        for j in (n - k)..n {
            let t = self.below(j + 1);
            if !picked.insert(t) {
                picked.insert(j);
            }
        }
        picked.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_stream() {
        // The first outputs of the reference algorithm (splitmix64.c's `next`) from the seed
        // 1234567, computed independently of this code.
        let mut g = SplitMix64::new(1_234_567);
        assert_eq!(g.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(g.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(g.next_u64(), 9_817_491_932_198_370_423);
    }

    #[test]
    fn choose_is_distinct_sorted_and_seed_determined() {
        let a = SplitMix64::new(7).choose(4096, 41);
        let b = SplitMix64::new(7).choose(4096, 41);
        assert_eq!(a, b);
        assert_eq!(a.len(), 41);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a.iter().all(|&x| x < 4096));
        assert_ne!(a, SplitMix64::new(8).choose(4096, 41));
    }

    #[test]
    fn choose_caps_at_the_population() {
        assert_eq!(SplitMix64::new(3).choose(5, 9), vec![0, 1, 2, 3, 4]);
        assert!(SplitMix64::new(3).choose(0, 2).is_empty());
    }

    #[test]
    fn below_stays_in_range() {
        let mut g = SplitMix64::new(11);
        for n in [1u64, 2, 3, 7, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(g.below(n) < n);
            }
        }
    }
}
