//! The hang guard of the tests that run the `venusc` binary: a child is hung when it has
//! spent [`CPU_LIMIT`] of CPU time, not wall time, so a loaded machine (one run took over two
//! minutes of wall time at a load of 20 on two cores) cannot fail a test that a quiet one
//! passes; [`WALL_LIMIT`] backs it up where the CPU time cannot be read or a child blocks
//! without spinning. Speed is measured by the benchmarks, never here.

use std::time::{Duration, Instant};

/// Generous for a debug build: the largest hostile input (200,000 items) takes about 6 s of
/// CPU.
pub const CPU_LIMIT: Duration = Duration::from_secs(60);

/// The wall-time backstop of a run that should spin if it hangs.
pub const WALL_LIMIT: Duration = Duration::from_secs(900);

/// The wall-time limit of a run whose hang would block without spinning (a read of a FIFO that
/// nobody writes): five times the 60 s these tests had, for a loaded machine.
pub const BLOCKED_WALL_LIMIT: Duration = Duration::from_secs(300);

/// CPU time (user + system) a running child has used: `/proc/PID/stat` fields 14 and 15, in
/// the kernel's fixed 100 ticks a second (USER_HZ). `None` without procfs.
fn child_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is parenthesised and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// `Some(what it spent)` once a child started at `start` is past [`CPU_LIMIT`] or `wall_limit`.
pub fn overdue(pid: u32, start: Instant, wall_limit: Duration) -> Option<String> {
    let wall = start.elapsed();
    let cpu = child_cpu(pid).unwrap_or(wall);
    (cpu > CPU_LIMIT || wall > wall_limit)
        .then(|| format!("{cpu:?} of CPU ({wall:?} of wall time)"))
}

#[test]
fn a_child_that_spins_is_overdue_and_one_that_sleeps_is_not() {
    // A sleeping child, not this test process: the test binary's own CPU time sums every test
    // thread it has run, and passes a minute on a long run.
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let pid = sleeper.id();
    let sleeping = overdue(pid, Instant::now(), WALL_LIMIT);
    let cpu = child_cpu(pid);
    let long_ago = Instant::now().checked_sub(WALL_LIMIT + Duration::from_secs(1));
    let past_wall = long_ago.map(|t| overdue(pid, t, WALL_LIMIT));
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(sleeping, None);
    assert!(cpu.is_none_or(|d| d < CPU_LIMIT), "{cpu:?}");
    if let Some(past) = past_wall {
        assert!(past.is_some());
    }
}
