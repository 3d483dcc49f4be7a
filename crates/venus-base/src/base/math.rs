//! Integer helpers the stages share: greatest common divisor, least common multiple, the
//! divisors of a count, and counts as people read them (`1,234,567`, `1 plan`, `2 plans`).
//!
//! Input: plain `u64` counts. Output: plain `u64`s and strings. Invariants: nothing here panics or
//! overflows (`lcm` saturates), and `divisors` is bounded by the caller's trial limit, so an
//! absurd count from the user costs at most `trial_limit` divisions.

/// The greatest common divisor; `gcd(0, 0) = 0`.
pub fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The least common multiple, saturating at `u64::MAX`; `0` when either side is `0`.
pub fn lcm(a: u64, b: u64) -> u64 {
    let g = gcd(a, b).max(1);
    (a / g).saturating_mul(b)
}

/// The divisors of `n`, ascending (none for `0`). Trial division stops at `trial_limit`, so
/// the list is exact for `n ≤ trial_limit²`; beyond that it holds the divisors found up to the
/// limit and their cofactors.
pub fn divisors(n: u64, trial_limit: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1u64;
    while d <= trial_limit && d.saturating_mul(d) <= n {
        if n.is_multiple_of(d) {
            small.push(d);
            if d != n / d {
                large.push(n / d);
            }
        }
        d += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 plan`, `1,080 plans`: the count with digit groups and the noun in agreement (`noun` is
/// the singular; the plural adds `s`).
pub fn count_of(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(n))
    }
}

/// A parameter count in model-card style: `1.03T`, `671.03B`, `135.27M`, or the count with
/// digit groups below a million.
pub fn short_count(n: u64) -> String {
    let x = n as f64;
    if x >= 1e12 {
        format!("{:.2}T", x / 1e12)
    } else if x >= 1e9 {
        format!("{:.2}B", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else {
        thousands(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_counts_read_like_model_cards() {
        assert_eq!(short_count(671_027_286_016), "671.03B");
        assert_eq!(short_count(1_026_408_000_000), "1.03T");
        assert_eq!(short_count(134_250_000), "134.25M");
        assert_eq!(short_count(123_456), "123,456");
    }

    #[test]
    fn gcd_of_counts_and_of_zero() {
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(gcd(18, 12), 6);
        assert_eq!(gcd(7, 1), 1);
        assert_eq!(gcd(0, 5), 5);
        assert_eq!(gcd(5, 0), 5);
        assert_eq!(gcd(0, 0), 0);
    }

    #[test]
    fn lcm_is_exact_then_saturates() {
        // Megatron's bucket padding: a multiple of lcm(dp, 128).
        assert_eq!(lcm(96, 128), 384);
        assert_eq!(lcm(4, 6), 12);
        assert_eq!(lcm(0, 7), 0);
        assert_eq!(lcm(0, 0), 0);
        assert_eq!(lcm(u64::MAX, u64::MAX - 1), u64::MAX);
    }

    #[test]
    fn divisors_ascend_and_zero_has_none() {
        assert_eq!(divisors(12, 1 << 20), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(1, 1 << 20), vec![1]);
        assert_eq!(divisors(49, 1 << 20), vec![1, 7, 49]);
        assert_eq!(divisors(1024, 1 << 20).len(), 11);
        assert!(divisors(0, 1 << 20).is_empty());
    }

    #[test]
    fn divisors_past_the_trial_limit_keep_the_pairs_found_below_it() {
        // 2^42 has 43 divisors. Up to 2^20 (the sweep's limit) every 2^k but 2^21 is found;
        // up to 10^6 (the plan suggestions' limit) 2^20 and 2^22 go missing too.
        let n = 1u64 << 42;
        let sweep = divisors(n, 1 << 20);
        assert_eq!(sweep.len(), 42);
        assert!(!sweep.contains(&(1 << 21)));
        let plan = divisors(n, 1_000_000);
        assert_eq!(plan.len(), 40);
        assert_eq!(plan[19..21], [1 << 19, 1 << 23]);
        // Below the limit² the list is exact whatever the limit.
        assert_eq!(divisors(1 << 40, 1 << 20).len(), 41);
    }

    #[test]
    fn counts_read_with_digit_groups_and_a_noun_in_agreement() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(4542038016), "4,542,038,016");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(count_of(1, "plan"), "1 plan");
        assert_eq!(count_of(0, "plan"), "0 plans");
        assert_eq!(count_of(1080, "candidate"), "1,080 candidates");
    }
}
