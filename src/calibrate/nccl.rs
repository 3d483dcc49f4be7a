//! nccl-tests output logs (`all_reduce_perf`, `all_gather_perf`, `reduce_scatter_perf`,
//! `alltoall_perf`): the collective, the ranks and hosts it ran on, and the out-of-place time
//! per message size.
//!
//! The format is nccl-tests' own (`src/common.cu`, `printHeader`/`printRow` of
//! <https://github.com/NVIDIA/nccl-tests>): `#` comment lines (the banner `# Collective test
//! starting: all_reduce_perf` in versions from 2.13, the `#  Rank  0 Group  0 Pid ... on HOST
//! device ...` lines, a column header `#  size  count  type  redop  root  time  algbw  busbw
//! #wrong  time ...`), then one row per size. The first `time` column is the out-of-place run,
//! in microseconds; `size` is the whole buffer in bytes (the gathered or reduced one), which is
//! the `S` of venusc's collectives.

use crate::trace::CollectiveKind;

/// One parsed log.
#[derive(Clone, Debug, PartialEq)]
pub struct NcclLog {
    pub kind: CollectiveKind,
    /// Ranks the test ran on (its `Rank N` lines).
    pub ranks: u32,
    /// Distinct hosts among them.
    pub hosts: u32,
    /// `(bytes, seconds)` per size, out-of-place.
    pub points: Vec<(f64, f64)>,
}

/// What is wrong with a log, at a 1-based line (0: the whole file).
#[derive(Clone, Debug, PartialEq)]
pub struct LogError {
    pub line: usize,
    pub message: String,
    pub help: String,
}

/// The collective of a test, from its banner or else from the file's name.
fn kind_of(word: &str) -> Option<CollectiveKind> {
    let w = word.to_ascii_lowercase().replace('-', "_");
    // `alltoall` before `all_gather`: neither contains the other, but keep the most specific.
    if w.contains("alltoall") || w.contains("all_to_all") {
        Some(CollectiveKind::AllToAll)
    } else if w.contains("all_reduce") || w.contains("allreduce") {
        Some(CollectiveKind::AllReduce)
    } else if w.contains("all_gather") || w.contains("allgather") {
        Some(CollectiveKind::AllGather)
    } else if w.contains("reduce_scatter") || w.contains("reducescatter") {
        Some(CollectiveKind::ReduceScatter)
    } else {
        None
    }
}

/// Reads a log; `name` (the file's name) names the collective when the banner does not.
pub fn parse(text: &str, name: &str) -> Result<NcclLog, LogError> {
    let mut kind = None;
    let mut ranks = 0u32;
    let mut hosts: Vec<String> = Vec::new();
    let mut columns: Option<(usize, usize)> = None;
    let mut points = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let trimmed = line.trim();
        if let Some(comment) = trimmed.strip_prefix('#') {
            let words: Vec<&str> = comment.split_whitespace().collect();
            if let Some(pos) = comment.find("Collective test starting:") {
                kind = kind.or_else(|| kind_of(&comment[pos..]));
            } else if words.first() == Some(&"Rank") {
                ranks = ranks.saturating_add(1);
                if let Some(at) = words.iter().position(|w| *w == "on") {
                    if let Some(host) = words.get(at + 1) {
                        if !hosts.iter().any(|h| h == host) {
                            hosts.push((*host).to_string());
                        }
                    }
                }
            } else if words.first() == Some(&"size") {
                let time = words.iter().position(|w| *w == "time");
                columns = time.map(|t| (0, t));
            }
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        let Some((size_col, time_col)) = columns else {
            return Err(LogError {
                line: lineno,
                message: "a data row before the `# size count type ... time` header".into(),
                help: "give the log as nccl-tests printed it, header lines included".into(),
            });
        };
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        let number = |col: usize, what: &str| -> Result<f64, LogError> {
            let field = fields.get(col).copied().unwrap_or("");
            match field.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(LogError {
                    line: lineno,
                    message: format!(
                        "the {what} column holds `{}`, not a number",
                        crate::calibrate::snippet(field)
                    ),
                    help: "give the log as nccl-tests printed it (one row per size)".into(),
                }),
            }
        };
        let bytes = number(size_col, "size")?;
        let micros = number(time_col, "time")?;
        if bytes > 0.0 && micros > 0.0 {
            points.push((bytes, micros * 1e-6));
        }
    }
    let kind = kind.or_else(|| kind_of(name)).ok_or_else(|| LogError {
        line: 0,
        message: "the log does not say which collective it measured".into(),
        help: "name the file after the test (`all_reduce_perf.log`, `all_gather_perf.log`, \
               `reduce_scatter_perf.log`, `alltoall_perf.log`) or keep its `# Collective test \
               starting:` line"
            .into(),
    })?;
    if ranks < 2 {
        return Err(LogError {
            line: 0,
            message: format!("the log lists {ranks} ranks; a collective needs at least 2"),
            help: "keep the `#  Rank  N Group ...` lines nccl-tests prints under `# Using devices`"
                .into(),
        });
    }
    if points.len() < 2 {
        return Err(LogError {
            line: 0,
            message: format!(
                "the log has {} sizes with a time; a fit needs at least 2",
                points.len()
            ),
            help: "run the test over a range of sizes, e.g. `-b 8 -e 8G -f 2`".into(),
        });
    }
    Ok(NcclLog {
        kind,
        ranks,
        hosts: hosts.len().max(1) as u32,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 1048576 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  101 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  102 on     node-a device  1 [0x2a] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  201 on     node-b device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  202 on     node-b device  1 [0x2a] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024            64     float    none      -1    20.10    0.05    0.04      0    19.80    0.05    0.04      0
       16384          1024     float    none      -1    25.00    0.66    0.49      0    24.70    0.66    0.50      0
     1048576         65536     float    none      -1   150.00    6.99    5.24      0   149.00    7.04    5.28      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 1.92
";

    #[test]
    fn a_log_gives_its_collective_ranks_hosts_and_out_of_place_times() {
        let log = parse(LOG, "x.log").unwrap();
        assert_eq!(log.kind, CollectiveKind::AllGather);
        assert_eq!((log.ranks, log.hosts), (4, 2));
        assert_eq!(log.points.len(), 3);
        assert_eq!(log.points[2].0, 1_048_576.0);
        assert!((log.points[2].1 - 150e-6).abs() < 1e-12);
    }

    #[test]
    fn without_a_banner_the_file_name_names_the_collective() {
        let text = LOG.replace("# Collective test starting: all_gather_perf\n", "");
        assert_eq!(
            parse(&text, "reduce_scatter_perf.txt").unwrap().kind,
            CollectiveKind::ReduceScatter
        );
        let e = parse(&text, "run.txt").unwrap_err();
        assert!(e.help.contains("all_reduce_perf.log"), "{}", e.help);
    }

    #[test]
    fn a_row_that_is_not_a_number_is_an_error_at_its_line() {
        let text = LOG.replace("150.00    6.99", "  N/A    6.99");
        let e = parse(&text, "x.log").unwrap_err();
        assert_eq!(e.line, 15);
        assert_eq!(e.message, "the time column holds `N/A`, not a number");
    }
}
