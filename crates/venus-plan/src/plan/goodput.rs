//! Failures, checkpoints and goodput: what interruptions cost a job, in closed form.
//!
//! Input: a validated [`Scenario`]: its cluster's [`ReliabilitySpec`] (mean times between
//! failures per GPU, node and link, the checkpoint storage's bandwidths, the restart time),
//! its parameter counts and precision recipe (the checkpoint's size), and the plan's
//! `checkpoint_interval`. Output: [`Goodput`]: interruptions per day, the checkpoint's size
//! and write and read times, the Young/Daly optimal interval, the work lost per interruption
//! and goodput = useful training time / wall time.
//! Invariants: nothing here reads the simulated timeline (the report multiplies in the
//! iteration time); every division is by a value validation checked above zero (E0335), and
//! every figure is finite.
//!
//! The model (first order, as Young and Daly derive their optimum): interruptions arrive as a
//! Poisson process of rate λ = Σ count_k / MTBF_k over the job's GPUs, nodes and links. The job
//! computes for τ, then stops for δ to write a checkpoint (Megatron-LM's default synchronous
//! save). An interruption loses on average half a cycle, (τ + δ) / 2, plus the restart R and the
//! checkpoint read. So, with M = 1 / λ,
//!
//! ```text
//! goodput = τ / (τ + δ) · (1 − ((τ + δ) / 2 + R + read) / M)
//! ```
//!
//! Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974:
//! τ = √(2δM). Daly, "A higher order estimate of the optimum checkpoint interval for restart
//! dumps", Future Generation Computer Systems 22(3), 2006, first-order form: τ = √(2δM) − δ
//! for δ < 2M, else τ = M. The goodput above is maximal at Daly's τ to first order in δ / M.

use venus_base::base::{Bytes, BytesPerSec, PerDay, Ratio, Seconds};

use super::{ReliabilitySpec, Scenario};

/// Interruptions per day of each component kind, and in all.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Interruptions {
    pub gpus: PerDay,
    pub nodes: PerDay,
    pub links: PerDay,
}

impl Interruptions {
    pub fn per_day(&self) -> PerDay {
        self.gpus + self.nodes + self.links
    }
}

/// The goodput report of one scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goodput {
    pub interruptions: Interruptions,
    /// Mean time between interruptions of the whole job, M = 1 / λ.
    pub job_mtbf: Seconds,
    /// What one checkpoint holds (Megatron's distributed checkpoint, [`checkpoint_size`]).
    pub checkpoint_size: Bytes,
    /// min(storage write bandwidth, every GPU's scale-out link at once).
    pub write_bandwidth: BytesPerSec,
    pub read_bandwidth: BytesPerSec,
    /// δ: the training pause of one synchronous checkpoint save.
    pub checkpoint_write: Seconds,
    pub checkpoint_read: Seconds,
    /// R: the cluster's `restart` (detection, rescheduling, re-initialisation).
    pub restart: Seconds,
    /// Daly's first-order optimum for δ and M.
    pub optimal_interval: Seconds,
    /// The interval the job runs: the plan's `checkpoint_interval`, else the optimum.
    pub interval: Seconds,
    /// Whether the plan wrote `checkpoint_interval`.
    pub interval_written: bool,
    /// Work lost per interruption: (τ + δ) / 2 + R + the checkpoint read.
    pub lost_per_interruption: Seconds,
    /// Useful training time over wall time at `interval`.
    pub goodput: Ratio,
    /// Goodput at `optimal_interval` (equal to `goodput` when no interval is written).
    pub optimal_goodput: Ratio,
}

impl Goodput {
    /// `None` when the cluster states no failure rate or no checkpoint storage bandwidth
    /// (validation reports the second, E0336).
    pub fn of(sc: &Scenario) -> Option<Goodput> {
        let r = &sc.cluster.reliability;
        let write = r.storage_write_bw?;
        let interruptions = interruptions(sc)?;
        let rate = interruptions.per_day().per_second();
        if rate <= 0.0 || !rate.is_finite() {
            return None;
        }
        let job_mtbf = Seconds(1.0 / rate);
        let size = checkpoint_size(sc);
        let link_cap = scale_out_bandwidth(sc);
        let write_bandwidth = BytesPerSec(write.0.min(link_cap.0));
        let read_bandwidth = BytesPerSec(r.storage_read_bw.unwrap_or(write).0.min(link_cap.0));
        let checkpoint_write = transfer_time(size, write_bandwidth);
        let checkpoint_read = transfer_time(size, read_bandwidth);
        let restart = r.restart.unwrap_or(Seconds(0.0));
        let optimal_interval = daly_interval(checkpoint_write, job_mtbf);
        let interval = sc.plan.checkpoint_interval.unwrap_or(optimal_interval);
        let recovery = Seconds(restart.0 + checkpoint_read.0);
        let at = |tau: Seconds| goodput(tau, checkpoint_write, recovery, job_mtbf);
        Some(Goodput {
            interruptions,
            job_mtbf,
            checkpoint_size: size,
            write_bandwidth,
            read_bandwidth,
            checkpoint_write,
            checkpoint_read,
            restart,
            optimal_interval,
            interval,
            interval_written: sc.plan.checkpoint_interval.is_some(),
            lost_per_interruption: lost_per_interruption(interval, checkpoint_write, recovery),
            goodput: at(interval),
            optimal_goodput: at(optimal_interval),
        })
    }

    /// Wall-clock time of `useful` training time, interruptions included.
    pub fn wall_time(&self, useful: Seconds) -> Seconds {
        if self.goodput.0 > 0.0 {
            Seconds(useful.0 / self.goodput.0)
        } else {
            Seconds(f64::INFINITY)
        }
    }
}

/// Expected interruptions per day: each GPU, node and scale-out link of the job fails
/// independently at 1 / its MTBF. `None` when no rate is written.
pub fn interruptions(sc: &Scenario) -> Option<Interruptions> {
    let r: &ReliabilitySpec = &sc.cluster.reliability;
    if r.gpu_mtbf.is_none() && r.node_mtbf.is_none() && r.link_mtbf.is_none() {
        return None;
    }
    let per_day = |count: u64, mtbf: Option<Seconds>| {
        mtbf.filter(|m| m.0 > 0.0)
            .map_or(PerDay(0.0), |m| PerDay::of_mtbf(count, m))
    };
    Some(Interruptions {
        gpus: per_day(sc.world, r.gpu_mtbf),
        nodes: per_day(nodes(sc), r.node_mtbf),
        links: per_day(sc.world, r.link_mtbf),
    })
}

/// The job's nodes: the elements of the cluster's outermost dim (one node when the cluster has
/// a single dim, which is then the node's own fabric).
pub fn nodes(sc: &Scenario) -> u64 {
    match sc.cluster.dims.as_slice() {
        [_, .., outer] => outer.size.max(1),
        _ => 1,
    }
}

/// What the job's GPUs can push to storage at once: each GPU's outermost-dim bandwidth (its
/// scale-out NIC) times the GPUs, as every data-parallel rank writes its own shard.
pub fn scale_out_bandwidth(sc: &Scenario) -> BytesPerSec {
    let per_gpu = sc.cluster.dims.last().map_or(0.0, |d| d.bandwidth.0);
    BytesPerSec(per_gpu * sc.world as f64)
}

/// One checkpoint as Megatron-LM's distributed checkpoint writes it: every parameter once in
/// its training dtype (the model's sharded state dict; replicas across data-parallel ranks are
/// written by one rank only, `replica_id`) plus, for the parameters that train, the
/// optimizer's fp32 master copy and both Adam moments
/// (megatron/core/optimizer/distrib_optimizer.py:1988 `sharded_param_state_fs_model_space`,
/// the default `fully_sharded_model_space` format; the save is spread over the data-parallel
/// ranks by megatron/core/dist_checkpointing/strategies/fully_parallel.py:46
/// `FullyParallelSaveStrategyWrapper`; Megatron-LM commit d98e8a64dd). The multi-token
/// prediction modules are saved too. Scalars (step, RNG states, the data iterator) are
/// negligible beside them.
pub fn checkpoint_size(sc: &Scenario) -> Bytes {
    let weights = sc.params.total.saturating_add(sc.params.mtp);
    // `task lora`: only the adapters have optimizer state (their weights are few beside the
    // frozen base's and not counted apart).
    let trainable = if sc.trainable_params() == sc.params.total {
        weights
    } else {
        sc.trainable_params()
    };
    Bytes(
        weights
            .saturating_mul(sc.recipe.weights.bytes())
            .saturating_add(trainable.saturating_mul(sc.recipe.optimizer_bytes())),
    )
}

fn transfer_time(size: Bytes, bandwidth: BytesPerSec) -> Seconds {
    if bandwidth.0 > 0.0 {
        Seconds(size.0 as f64 / bandwidth.0)
    } else {
        Seconds(f64::INFINITY)
    }
}

/// Daly's first-order optimum (2006): τ = √(2δM) − δ when δ < 2M, else M.
pub fn daly_interval(delta: Seconds, mtbf: Seconds) -> Seconds {
    if delta.0 < 2.0 * mtbf.0 {
        Seconds((2.0 * delta.0 * mtbf.0).sqrt() - delta.0)
    } else {
        mtbf
    }
}

/// Young's optimum (1974): τ = √(2δM).
pub fn young_interval(delta: Seconds, mtbf: Seconds) -> Seconds {
    Seconds((2.0 * delta.0 * mtbf.0).sqrt())
}

/// Work lost per interruption: half a cycle of compute and checkpoint, then the recovery.
pub fn lost_per_interruption(tau: Seconds, delta: Seconds, recovery: Seconds) -> Seconds {
    Seconds((tau.0 + delta.0) / 2.0 + recovery.0)
}

/// First-order goodput at interval τ (module doc), clamped to [0, 1].
pub fn goodput(tau: Seconds, delta: Seconds, recovery: Seconds, mtbf: Seconds) -> Ratio {
    let cycle = tau.0 + delta.0;
    if cycle <= 0.0 || mtbf.0 <= 0.0 {
        return Ratio(0.0);
    }
    let checkpointing = tau.0 / cycle;
    let failures = 1.0 - lost_per_interruption(tau, delta, recovery).0 / mtbf.0;
    let g = checkpointing * failures;
    Ratio(if g.is_finite() {
        g.clamp(0.0, 1.0)
    } else {
        0.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn young_and_daly_intervals_on_known_numbers() {
        // δ = 5 min, M = 24 h: Young √(2 · 300 · 86400) = 7200 s; Daly 7200 − 300 = 6900 s.
        let (delta, m) = (Seconds(300.0), Seconds(86_400.0));
        assert!(close(young_interval(delta, m).0, 7200.0, 1e-9));
        assert!(close(daly_interval(delta, m).0, 6900.0, 1e-9));
    }

    #[test]
    fn daly_interval_is_the_mtbf_when_a_checkpoint_takes_longer_than_two_mtbfs() {
        assert_eq!(
            daly_interval(Seconds(500.0), Seconds(200.0)),
            Seconds(200.0)
        );
    }

    #[test]
    fn goodput_on_known_numbers() {
        // τ = 6900, δ = 300: 6900 / 7200 = 0.958333; lost = 3600 + 600 = 4200 s of M = 86400:
        // 1 − 4200 / 86400 = 0.951389; product 0.911748.
        let g = goodput(
            Seconds(6900.0),
            Seconds(300.0),
            Seconds(600.0),
            Seconds(86_400.0),
        );
        assert!(close(g.0, 0.958_333_3 * 0.951_388_9, 1e-6), "{}", g.0);
        assert!(close(
            lost_per_interruption(Seconds(6900.0), Seconds(300.0), Seconds(600.0)).0,
            4200.0,
            1e-9
        ));
    }

    #[test]
    fn daly_interval_is_the_first_order_goodput_maximum_to_first_order() {
        // δ / M = 1.2%: the product form's exact maximum sits a hair from Daly's τ (its
        // second-order terms), so nearby intervals may gain 1e-4 at most; far ones lose.
        let (delta, r, m) = (Seconds(120.0), Seconds(600.0), Seconds(10_000.0));
        let tau = daly_interval(delta, m);
        let best = goodput(tau, delta, r, m).0;
        for factor in [0.8, 0.95, 1.05, 1.25] {
            let other = goodput(Seconds(tau.0 * factor), delta, r, m).0;
            assert!(other < best + 1e-4, "τ × {factor}: {other} vs {best}");
        }
        for factor in [0.5, 2.0] {
            let other = goodput(Seconds(tau.0 * factor), delta, r, m).0;
            assert!(other < best - 0.005, "τ × {factor}: {other} vs {best}");
        }
    }

    #[test]
    fn goodput_is_zero_when_the_lost_work_exceeds_the_mtbf() {
        let g = goodput(
            Seconds(100.0),
            Seconds(10.0),
            Seconds(5000.0),
            Seconds(1000.0),
        );
        assert_eq!(g, Ratio(0.0));
    }
}
