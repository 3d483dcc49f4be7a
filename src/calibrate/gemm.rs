//! A table of measured GEMM throughputs, and the fit of the analytic model's GEMM curve to it.
//!
//! The table is tab- or comma-separated with a header naming at least `m`, `n`, `k`, `dtype`
//! (or `precision`) and `tflops` (TFLOP/s achieved; `tflop/s` and `tflops_per_s` are read too),
//! in any order; other columns are ignored, `#` lines are comments. The curve is the analytic
//! model's (`cost::analytic::Calibration::gemm`): efficiency `E · Π_{d ∈ m,n,k} d / (d + h)`
//! of the GPU's peak for the dtype. The fit minimises the squared error of the logarithm (a
//! relative error, so small and large GEMMs count alike): for a given `h` the best `ln E` is the
//! mean residual, and `h` is found by golden-section search (the error is unimodal in `h` on
//! these curves; the search keeps the best point it saw).

use crate::base::Precision;

/// One measured GEMM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmRow {
    pub m: f64,
    pub n: f64,
    pub k: f64,
    pub precision: Precision,
    /// Achieved FLOP/s.
    pub flops_per_s: f64,
}

/// What is wrong with a table, at a 1-based line.
#[derive(Clone, Debug, PartialEq)]
pub struct TableError {
    pub line: usize,
    pub message: String,
    pub help: String,
}

/// The dtype words of a GEMM benchmark, as the GEMM's tensor-core precision.
fn precision_of(word: &str) -> Option<Precision> {
    match word.to_ascii_lowercase().as_str() {
        "bf16" | "bfloat16" | "fp16" | "f16" | "half" => Some(Precision::Bf16),
        "fp8" | "e4m3" | "e5m2" | "fp8_e4m3" | "fp8_e5m2" | "float8" => Some(Precision::Fp8),
        "fp4" | "nvfp4" | "mxfp4" | "e2m1" => Some(Precision::Fp4),
        _ => None,
    }
}

fn split(line: &str) -> Vec<&str> {
    let sep = if line.contains('\t') { '\t' } else { ',' };
    line.split(sep).map(str::trim).collect()
}

/// Reads a GEMM table.
pub fn parse(text: &str) -> Result<Vec<GemmRow>, TableError> {
    let mut header: Option<[usize; 5]> = None;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields = split(trimmed);
        let Some(cols) = header else {
            let find = |names: &[&str]| {
                fields
                    .iter()
                    .position(|f| names.contains(&f.to_ascii_lowercase().as_str()))
            };
            let wanted = [
                find(&["m"]),
                find(&["n"]),
                find(&["k"]),
                find(&["dtype", "precision"]),
                find(&["tflops", "tflop/s", "tflops_per_s"]),
            ];
            if let [Some(m), Some(n), Some(k), Some(d), Some(t)] = wanted {
                header = Some([m, n, k, d, t]);
                continue;
            }
            return Err(TableError {
                line: lineno,
                message:
                    "the first line is not a header naming `m`, `n`, `k`, `dtype` and `tflops`"
                        .into(),
                help: "start the table with a header such as `m\tn\tk\tdtype\ttflops`".into(),
            });
        };
        let field = |c: usize| fields.get(c).copied().unwrap_or("");
        let dim = |c: usize, what: &str| -> Result<f64, TableError> {
            match field(c).parse::<u64>() {
                Ok(v) if v > 0 && v <= 1 << 40 => Ok(v as f64),
                _ => Err(TableError {
                    line: lineno,
                    message: format!(
                        "`{what}` is `{}`, not a GEMM dimension",
                        crate::calibrate::snippet(field(c))
                    ),
                    help: "write each dimension as a whole number from 1 to 2^40".into(),
                }),
            }
        };
        let (m, n, k) = (dim(cols[0], "m")?, dim(cols[1], "n")?, dim(cols[2], "k")?);
        let precision = precision_of(field(cols[3])).ok_or_else(|| TableError {
            line: lineno,
            message: format!(
                "`{}` is not a GEMM dtype venusc knows",
                crate::calibrate::snippet(field(cols[3]))
            ),
            help: "write `bf16` (or `fp16`), `fp8` (`e4m3`, `e5m2`) or `fp4` (`nvfp4`)".into(),
        })?;
        let tflops = match field(cols[4]).parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 && v < 1e6 => v,
            _ => {
                return Err(TableError {
                    line: lineno,
                    message: format!(
                        "`tflops` is `{}`, not a throughput",
                        crate::calibrate::snippet(field(cols[4]))
                    ),
                    help: "write the achieved TFLOP/s, a number above 0 (e.g. `712.4`)".into(),
                })
            }
        };
        rows.push(GemmRow {
            m,
            n,
            k,
            precision,
            flops_per_s: tflops * 1e12,
        });
    }
    Ok(rows)
}

/// The fitted curve: `efficiency` of `peak` for an unboundedly large GEMM, `half_dim`, and the
/// root-mean-square relative error of the fit over `rows` GEMMs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmCurve {
    pub efficiency: f64,
    pub half_dim: f64,
    pub rms_error: f64,
    pub rows: usize,
}

/// The largest `half_dim` searched: past it a GEMM of 8K per side would run at a third of
/// its curve's top, which no tensor-core GEMM library does.
const MAX_HALF_DIM: f64 = 8192.0;

/// Fits the curve to the rows (all of one precision) against `peak` FLOP/s.
pub fn fit(rows: &[GemmRow], peak: f64) -> GemmCurve {
    let observed: Vec<f64> = rows.iter().map(|r| (r.flops_per_s / peak).ln()).collect();
    let shape = |h: f64, r: &GemmRow| {
        let f = |d: f64| (d / (d + h)).ln();
        f(r.m) + f(r.n) + f(r.k)
    };
    // For a given h: the best ln E and the summed squared error.
    let at = |h: f64| {
        let residual: Vec<f64> = rows
            .iter()
            .zip(&observed)
            .map(|(r, o)| o - shape(h, r))
            .collect();
        let ln_e = residual.iter().sum::<f64>() / residual.len().max(1) as f64;
        let sse: f64 = residual.iter().map(|x| (x - ln_e).powi(2)).sum();
        (sse, ln_e)
    };
    let (mut lo, mut hi) = (0.0f64, MAX_HALF_DIM);
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let mut best = (at(0.0).0, 0.0);
    for _ in 0..80 {
        let a = hi - phi * (hi - lo);
        let b = lo + phi * (hi - lo);
        let (fa, fb) = (at(a).0, at(b).0);
        for (f, h) in [(fa, a), (fb, b)] {
            if f < best.0 {
                best = (f, h);
            }
        }
        if fa <= fb {
            hi = b;
        } else {
            lo = a;
        }
    }
    let h = best.1;
    let ln_e = at(h).1;
    let rms = (rows
        .iter()
        .zip(&observed)
        .map(|(r, o)| ((ln_e + shape(h, r)).exp() / o.exp() - 1.0).powi(2))
        .sum::<f64>()
        / rows.len().max(1) as f64)
        .sqrt();
    GemmCurve {
        efficiency: ln_e.exp(),
        half_dim: h,
        rms_error: rms,
        rows: rows.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows on an exact curve, E 0.8 and h 256, at a 1000 TFLOP/s peak.
    fn exact_rows() -> Vec<GemmRow> {
        let mut rows = Vec::new();
        for &m in &[256.0, 1024.0, 4096.0, 16384.0] {
            for &k in &[512.0, 8192.0] {
                let e = 0.8 * (m / (m + 256.0)) * (4096.0 / (4096.0 + 256.0)) * (k / (k + 256.0));
                rows.push(GemmRow {
                    m,
                    n: 4096.0,
                    k,
                    precision: Precision::Bf16,
                    flops_per_s: e * 1e15,
                });
            }
        }
        rows
    }

    #[test]
    fn the_fit_recovers_the_curve_the_rows_were_drawn_from() {
        let c = fit(&exact_rows(), 1e15);
        assert!((c.efficiency - 0.8).abs() < 1e-4, "{c:?}");
        assert!((c.half_dim - 256.0).abs() < 0.5, "{c:?}");
        assert!(c.rms_error < 1e-6, "{c:?}");
        assert_eq!(c.rows, 8);
    }

    #[test]
    fn the_table_is_read_by_its_header_in_any_column_order() {
        let rows = parse("# bench\ntflops,dtype,k,n,m,note\n712.5,bf16,8192,8192,8192,x\n1400,e4m3,4096,4096,4096,\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].m, rows[0].k), (8192.0, 8192.0));
        assert_eq!(rows[1].precision, Precision::Fp8);
        assert_eq!(rows[1].flops_per_s, 1.4e15);
    }

    #[test]
    fn a_bad_cell_is_an_error_at_its_line_with_the_fix() {
        let e = parse("m\tn\tk\tdtype\ttflops\n8192\t8192\t0\tbf16\t700\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.message, "`k` is `0`, not a GEMM dimension");
        let e = parse("m\tn\tk\tdtype\ttflops\n8192\t8192\t8192\tint8\t700\n").unwrap_err();
        assert!(e.help.contains("`fp8`"), "{}", e.help);
        let e = parse("size\ttime\n").unwrap_err();
        assert_eq!(e.line, 1);
    }
}
