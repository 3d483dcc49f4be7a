//! A table of the user's own measured training runs (RUNS.md's format, read by `validate`'s
//! parser), and the fit of the analytic model's calibration to it through the simulator.
//!
//! Input: the table's text and the arch to calibrate. Every speed row whose GPU is of that arch
//! becomes the scenario `validate` builds for it ([`crate::published::SpeedRow`]); the fit
//! simulates all of them with candidate constants and minimises the sum of squared logarithms
//! of predicted / published iteration time (a relative error, so short and long runs count
//! alike). The constants are the arch-wide ones the compute model and the cluster expose:
//! the GEMM curve's top efficiency and half dimension (`gemm_efficiency`, `gemm_half_dim`) and
//! one factor on every dim's bus efficiency (the network), never a knob of one row; a table of
//! few configurations fits the asymptote alone ([`Free`]). Nelder–Mead
//! ([`super::nelder_mead`]) runs on their logarithms from the arch's current calibration.
//!
//! Output: a [`RunsFit`]: the constants, and each row's residual in its own metric; rows held
//! out of the fit (`holdout`) are predicted with the fitted constants and reported apart, so a
//! fit that only memorised its rows shows.

use rayon::prelude::*;

use crate::base::{GpuArch, Ratio};
use crate::cost::Calibration;
use crate::plan::{GemmFit, Scenario};
use crate::published::{self, tsv, Metric, SpeedRow};

use super::Mismatch;

/// Nelder–Mead iterations of `calibrate --runs`: each simulates every fitted row once or
/// twice; on these smooth three-constant problems the simplex has collapsed well before.
pub const STEPS: usize = 60;

/// Which rows the fit sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holdout {
    /// Every row is fitted.
    None,
    /// Rows at odd positions (the 2nd, 4th, … of the arch's rows, in table order) are only
    /// predicted: fit on the even ones, report the odd ones.
    Odd,
}

/// Which of the constants besides the GEMM asymptote the fit may move: a table of few
/// configurations supports fewer free constants (two rows of one shape fix one asymptote, not
/// a shape curve).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Free {
    /// The GEMM curve's half dimension (`gemm_half_dim`); off keeps the start's.
    pub half_dim: bool,
    /// The factor on the network's bus efficiency; off keeps the network as written.
    pub network: bool,
}

/// The constants being fitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constants {
    pub gemm_efficiency: f64,
    pub gemm_half_dim: f64,
    /// Factor on every dim's bus efficiency; 1 keeps the network as written.
    pub network: f64,
}

/// One row's outcome with the fitted constants.
#[derive(Clone, Debug, PartialEq)]
pub struct Residual {
    pub id: String,
    pub metric: Metric,
    pub published: f64,
    pub predicted: f64,
    /// (predicted − published) / published of the row's metric.
    pub error: f64,
    /// Held out of the fit.
    pub held_out: bool,
}

/// The fit.
#[derive(Clone, Debug, PartialEq)]
pub struct RunsFit {
    pub arch: GpuArch,
    pub start: Constants,
    pub fitted: Constants,
    pub rows: Vec<Residual>,
    /// Rows not simulated, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Rows of other archs (not fitted).
    pub other_arch: usize,
}

impl RunsFit {
    /// Mean absolute error of the fitted (`held_out` false) or held-out rows.
    pub fn mape(&self, held_out: bool) -> Option<f64> {
        let errs: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| r.held_out == held_out)
            .map(|r| r.error.abs())
            .collect();
        (!errs.is_empty()).then(|| errs.iter().sum::<f64>() / errs.len() as f64)
    }
}

/// A table's rows of one arch, ready to fit.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub rows: Vec<SpeedRow>,
    /// Rows not simulated, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Rows of other archs (not fitted).
    pub other_arch: usize,
}

/// The rows of `table` that calibrate `arch`, each ready to simulate; with the rows that do not
/// simulate (any arch: a row that fails to build names no GPU for certain) and the count of
/// other archs' rows.
pub fn prepare(table: &str, arch: GpuArch) -> Result<Prepared, Mismatch> {
    let rows = tsv::parse(table).map_err(|e| Mismatch {
        message: format!("the runs table cannot be read: {e}"),
        help: "give a table in RUNS.md's format (the published-runs table's header)".into(),
    })?;
    let built: Vec<(tsv::Row, Result<SpeedRow, String>)> = rows
        .into_par_iter()
        .map(|r| {
            let s = SpeedRow::of(&r).and_then(|s| {
                // A row the simulator cannot run with its written constants is not fitted.
                published::predict(&s.scenario).map(|_| s)
            });
            (r, s)
        })
        .collect();
    let mut mine = Vec::new();
    let mut skipped = Vec::new();
    let mut other = 0;
    let mut archs: Vec<GpuArch> = Vec::new();
    for (row, s) in built {
        match s {
            Ok(s) if s.scenario.cluster.gpu.arch == arch => mine.push(s),
            Ok(s) => {
                archs.push(s.scenario.cluster.gpu.arch);
                other += 1;
            }
            Err(why) => skipped.push((row.id.clone(), why)),
        }
    }
    if mine.is_empty() {
        archs.sort_by_key(|a| a.word());
        archs.dedup();
        let have = if archs.is_empty() {
            "none of its rows simulates".to_string()
        } else {
            format!(
                "it has rows of {}",
                archs
                    .iter()
                    .map(|a| format!("`{}`", a.word()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return Err(Mismatch {
            message: format!(
                "the runs table has no speed row on a `{}` GPU that simulates",
                arch.word()
            ),
            help: format!(
                "add measured runs on a `{}` GPU, or calibrate a scenario whose GPU is of the \
                 table's arch ({have})",
                arch.word()
            ),
        });
    }
    Ok(Prepared {
        rows: mine,
        skipped,
        other_arch: other,
    })
}

/// The arch's constants before the fit: its calibration with the GPU's own GEMM keys.
pub fn start_of(sc: &Scenario) -> Constants {
    let gpu = &sc.cluster.gpu;
    let cal = Calibration::for_arch(gpu.arch).with_gemm(gpu.gemm);
    Constants {
        gemm_efficiency: cal.gemm_efficiency,
        gemm_half_dim: cal.gemm_half_dim,
        network: 1.0,
    }
}

/// A row's scenario with the constants in place: the GPU's GEMM keys set, every dim's bus
/// efficiency scaled by the network factor.
pub fn with_constants(sc: &Scenario, c: Constants) -> Scenario {
    let mut sc = sc.clone();
    sc.cluster.gpu.gemm = GemmFit {
        efficiency: Some(Ratio(c.gemm_efficiency)),
        half_dim: Some(c.gemm_half_dim.round().max(0.0) as u64),
    };
    if c.network != 1.0 {
        for d in &mut sc.cluster.dims {
            d.efficiency = Some(Ratio(d.efficiency.map_or(1.0, |r| r.0) * c.network));
        }
    }
    sc
}

/// The simulated iteration time of a row with the constants; `None` when it does not run.
fn predicted_time(row: &SpeedRow, c: Constants) -> Option<f64> {
    published::predict(&with_constants(&row.scenario, c))
        .ok()
        .map(|p| p.iteration.0)
        .filter(|t| *t > 0.0 && t.is_finite())
}

/// The misfit of the constants on `rows`: Σ ln²(predicted / published time).
fn misfit(rows: &[&SpeedRow], c: Constants) -> f64 {
    rows.par_iter()
        .map(|r| match predicted_time(r, c) {
            Some(t) => (t / r.published_time().0).ln().powi(2),
            None => f64::INFINITY,
        })
        .sum()
}

/// The search space: logarithms of the free constants (the efficiency first, then the half
/// dimension and the network factor where free), the efficiency capped at 100% and the half
/// dimension kept within a GEMM library's range (as `--gemm`'s fit keeps it).
fn constants_at(x: &[f64], start: Constants, free: Free) -> Constants {
    let mut rest = x[1..].iter();
    let mut next = |on: bool| if on { rest.next().copied() } else { None };
    let half_dim = next(free.half_dim);
    let network = next(free.network);
    Constants {
        gemm_efficiency: x[0].exp().min(1.0),
        gemm_half_dim: half_dim.map_or(start.gemm_half_dim, |h| h.exp().clamp(1.0, 8192.0)),
        network: network.map_or(start.network, |n| n.exp().min(10.0)),
    }
}

/// Fits the constants to the rows (the held-out ones excepted) from `start`.
pub fn fit(
    prepared: Prepared,
    start: Constants,
    free: Free,
    holdout: Holdout,
    steps: usize,
) -> RunsFit {
    let Prepared {
        rows,
        skipped,
        other_arch,
    } = prepared;
    let arch = rows
        .first()
        .map_or(GpuArch::Hopper, |r| r.scenario.cluster.gpu.arch);
    let held = |i: usize| holdout == Holdout::Odd && i % 2 == 1 && rows.len() > 1;
    let fitted_rows: Vec<&SpeedRow> = rows
        .iter()
        .enumerate()
        .filter(|&(i, _)| !held(i))
        .map(|(_, r)| r)
        .collect();
    let mut x0 = vec![start.gemm_efficiency.ln()];
    if free.half_dim {
        x0.push(start.gemm_half_dim.max(1.0).ln());
    }
    if free.network {
        x0.push(start.network.ln());
    }
    let f = |x: &[f64]| misfit(&fitted_rows, constants_at(x, start, free));
    let best = super::nelder_mead(f, &x0, 0.3, steps);
    let fitted = constants_at(&best, start, free);
    let residuals = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let t = predicted_time(r, fitted).unwrap_or(f64::NAN);
            let predicted = r.conversion.metric(crate::base::Seconds(t));
            Residual {
                id: r.row.id.clone(),
                metric: r.metric,
                published: r.published,
                predicted,
                error: (predicted - r.published) / r.published,
                held_out: held(i),
            }
        })
        .collect();
    RunsFit {
        arch,
        start,
        fitted,
        rows: residuals,
        skipped,
        other_arch,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const COLUMNS: &str = "id\tsource\tmodel\tparams_b\tlayers\thidden\tffn_hidden\theads\t\
        kv_groups\tvocab\tseq_len\tglobal_batch\tmicro_batch\ttp\tpp\tvpp\tdp\tcp\tep\t\
        seq_parallel\trecompute\tdist_optimizer\tgpu\tnum_gpus\tmetric\tvalue\tnotes\t\
        framework\ttask\tprecision\tmegatron_args\tnvlink_domain\tnic_gbps\tgpu_memory_gib";

    /// Layers, hidden, heads, tp, pp, dp, global batch, micro batch.
    type Shape = (u64, u64, u64, u64, u64, u64, u64, u64);

    /// A runs table of small GPT runs on `gpu` in RUNS.md's format, each `iter_time_s` row
    /// valued by `value(i)`: layers, hidden, heads, tp, pp, dp, global and micro batch.
    pub(crate) fn table(gpu: &str, value: impl Fn(usize) -> f64) -> String {
        let shapes: [Shape; 5] = [
            (4, 1024, 16, 1, 1, 8, 64, 2),
            (4, 2048, 16, 2, 1, 4, 32, 1),
            (8, 4096, 32, 4, 2, 1, 16, 1),
            (4, 8192, 64, 8, 1, 1, 8, 1),
            (6, 3072, 24, 2, 2, 2, 32, 2),
        ];
        let mut out = format!("{COLUMNS}\n");
        for (i, &(l, h, heads, tp, pp, dp, gb, mb)) in shapes.iter().enumerate() {
            out.push_str(&format!(
                "run{i}\tour cluster\tgpt-{h}\t\t{l}\t{h}\t{}\t{heads}\t{heads}\t32000\t2048\t\
                 {gb}\t{mb}\t{tp}\t{pp}\t\t{dp}\t1\t1\tno\tno\tyes\t{gpu}\t{}\titer_time_s\t{}\t\t\
                 megatron\tpretrain\tbf16\t\t\t\t\n",
                4 * h,
                tp * pp * dp,
                value(i)
            ));
        }
        out
    }

    /// The table's rows valued by venusc itself with the given constants.
    pub(crate) fn table_drawn_with(gpu: &str, c: Constants) -> String {
        let rows = prepare(&table(gpu, |_| 1.0), GpuArch::Hopper).unwrap().rows;
        let times: Vec<f64> = rows.iter().map(|r| predicted_time(r, c).unwrap()).collect();
        table(gpu, |i| times[i])
    }

    #[test]
    fn runs_of_a_gpu_30_percent_slower_fit_back_to_its_constants() {
        let hopper = Calibration::hopper();
        let slow = Constants {
            gemm_efficiency: 0.7 * hopper.gemm_efficiency,
            gemm_half_dim: hopper.gemm_half_dim,
            network: 1.0,
        };
        let text = table_drawn_with("H100-SXM5-80GB", slow);
        let prepared = prepare(&text, GpuArch::Hopper).unwrap();
        assert_eq!(
            (
                prepared.rows.len(),
                prepared.skipped.len(),
                prepared.other_arch
            ),
            (5, 0, 0)
        );
        let start = Constants {
            gemm_efficiency: hopper.gemm_efficiency,
            gemm_half_dim: hopper.gemm_half_dim,
            network: 1.0,
        };
        let all = Free {
            half_dim: true,
            network: true,
        };
        let fit = fit(prepared, start, all, Holdout::None, STEPS);
        let c = fit.fitted;
        assert!((c.gemm_efficiency - 0.56).abs() < 0.005, "{c:?}");
        assert!((c.gemm_half_dim - 320.0).abs() < 16.0, "{c:?}");
        assert!((c.network - 1.0).abs() < 0.03, "{c:?}");
        assert!(fit.mape(false).unwrap() < 0.003, "{:?}", fit.rows);
        assert_eq!(fit.mape(true), None);
    }

    #[test]
    fn held_out_rows_are_predicted_but_not_fitted() {
        let text = table("H100-SXM5-80GB", |_| 1.0);
        let prepared = prepare(&text, GpuArch::Hopper).unwrap();
        let start = start_of(&prepared.rows[0].scenario);
        let gpu_only = Free {
            half_dim: true,
            network: false,
        };
        let fit = fit(prepared, start, gpu_only, Holdout::Odd, 0);
        let held: Vec<&str> = fit
            .rows
            .iter()
            .filter(|r| r.held_out)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(held, ["run1", "run3"]);
        // No step: the start, unchanged, and the network kept.
        assert_eq!(fit.fitted.network, 1.0);
        assert_eq!(fit.fitted.gemm_efficiency, 0.8);
    }

    #[test]
    fn a_fit_of_the_asymptote_alone_keeps_the_curve_and_the_network() {
        let hopper = Calibration::hopper();
        let slow = Constants {
            gemm_efficiency: 0.8 * hopper.gemm_efficiency,
            gemm_half_dim: hopper.gemm_half_dim,
            network: 1.0,
        };
        let text = table_drawn_with("H100-SXM5-80GB", slow);
        let prepared = prepare(&text, GpuArch::Hopper).unwrap();
        let start = Constants {
            gemm_efficiency: hopper.gemm_efficiency,
            ..slow
        };
        let asymptote = Free {
            half_dim: false,
            network: false,
        };
        let fit = fit(prepared, start, asymptote, Holdout::None, STEPS);
        let c = fit.fitted;
        assert!((c.gemm_efficiency - 0.64).abs() < 0.005, "{c:?}");
        assert_eq!((c.gemm_half_dim, c.network), (320.0, 1.0));
        assert!(fit.mape(false).unwrap() < 0.003, "{:?}", fit.rows);
    }

    #[test]
    fn a_table_without_a_row_of_the_arch_names_the_archs_it_has() {
        let text = table("A100-SXM4-80GB", |_| 1.0);
        let e = prepare(&text, GpuArch::Hopper).unwrap_err();
        assert_eq!(
            e.message,
            "the runs table has no speed row on a `hopper` GPU that simulates"
        );
        assert!(e.help.contains("(it has rows of `ampere`)"), "{}", e.help);
    }
}
