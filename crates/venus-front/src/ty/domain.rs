//! Rack-scale NVLink domains: a job's share of each domain (`gpus`, `per_domain`, `tray`).
//!
//! Input: the cluster's dims as written (after `nodes`) and its `gpus`, `per_domain` and
//! `tray` counts. Output: the dims the job runs on — the dim inside the outermost (the NVLink
//! domain) shrunk to the GPUs the job uses of each domain, the outermost grown to the number of
//! domains — or a [`DomainProblem`] (E0313, E0314) with its computed help.
//! Invariants: a job is spread evenly (every domain holds the same number of the job's GPUs),
//! because ranks are laid out on a grid of dims; every count is a multiple of the tray; no
//! arithmetic on user numbers can overflow (checked and saturating products).

use super::{Dim, Spanned};
use venus_diag::diag::{Code, Diagnostic, Identity, Loc};

/// The domain keys of one cluster, as written (`None`: not written).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DomainKeys {
    pub gpus: Option<Spanned<u64>>,
    pub per_domain: Option<Spanned<u64>>,
    pub tray: Option<Spanned<u64>>,
    pub nodes: Option<Spanned<u64>>,
}

impl DomainKeys {
    fn any(&self) -> bool {
        self.gpus.is_some() || self.per_domain.is_some() || self.tray.is_some()
    }
}

/// Why a job's share of the domains cannot be laid out.
#[derive(Clone, Debug, PartialEq)]
pub enum DomainProblem {
    /// E0313: `gpus` is not a whole number of the job's allocation unit (`unit` GPUs: a tray,
    /// or `per_domain` of each domain, times the GPUs of the dims inside the domain).
    NotWhole {
        gpus: u64,
        loc: Loc,
        unit: u64,
        /// What the unit is, for the message (`4-GPU trays`).
        unit_name: String,
        nearest: Vec<u64>,
    },
    /// E0314: `per_domain` is not a multiple of the tray or does not fit the domain.
    PerDomain {
        per_domain: u64,
        loc: Loc,
        tray: u64,
        domain: u64,
        domain_dim: String,
        domain_loc: Loc,
        nearest: Vec<u64>,
    },
    /// E0314: `tray` does not divide the domain.
    Tray {
        tray: u64,
        loc: Loc,
        domain: u64,
        domain_dim: String,
        domain_loc: Loc,
        nearest: Vec<u64>,
    },
    /// E0314: a domain key on a cluster of one dim (there is no domain inside a scale-out).
    NoDomain { key: &'static str, loc: Loc },
    /// E0314: `gpus` and `nodes` both size the outermost dim.
    GpusAndNodes {
        gpus_loc: Loc,
        nodes_loc: Loc,
        gpus: u64,
    },
}

/// W0008: `gpus` spread evenly takes at least twice the domains of the fewest that hold it,
/// because no whole number of trays per domain divides it over those (`gpus 100` on 72-GPU
/// racks: 5 × 20, where 2 racks hold 100). The rank layout needs equal domains, so the extra domains are
/// simulated; `nearest` are the closest counts that fill the fewest domains evenly, each with
/// its share per domain.
#[derive(Clone, Debug, PartialEq)]
pub struct SpreadWarning {
    pub gpus: u64,
    pub loc: Loc,
    pub domain_dim: String,
    pub domains: u64,
    pub per_domain: u64,
    pub fewest: u64,
    pub nearest: Vec<(u64, u64)>,
}

impl SpreadWarning {
    /// The diagnostic of this warning, carrying its identity.
    pub fn diagnostic(&self) -> Diagnostic {
        self.render().with_identity(Identity::of(self))
    }

    fn render(&self) -> Diagnostic {
        let options: Vec<String> = self
            .nearest
            .iter()
            .map(|&(g, m)| format!("`gpus {g}` ({} domains of {m})", self.fewest))
            .collect();
        let help = match options.as_slice() {
            [] => "write `per_domain` to choose the share of each domain".to_string(),
            [a] => format!("use {a}"),
            [init @ .., last] => format!("use {} or {last}", init.join(", ")),
        };
        Diagnostic::new(
            Code::W0008,
            format!(
                "`gpus {}` is spread over {} `{}` domains of {} GPUs, where {} could hold it",
                self.gpus, self.domains, self.domain_dim, self.per_domain, self.fewest
            ),
            self.loc,
            format!("{} × {} GPUs", self.domains, self.per_domain),
        )
        .with_help(help)
    }
}

/// The warning when the even spread of `share` GPUs (per column of the dims inside) over
/// domains of `domain` takes more domains than the fewest that hold it.
fn spread_warning(
    gpus: &Spanned<u64>,
    domain_dim: &str,
    share: u64,
    per_domain: u64,
    tray: u64,
    domain: u64,
    inner: u64,
) -> Option<SpreadWarning> {
    let domains = share / per_domain.max(1);
    let fewest = share.div_ceil(domain.max(1));
    // Only a layout that scatters the job over at least twice the domains it needs: rounding
    // to whole blocks of trays (1024 GPUs as 16 racks of 64, not 15 of 72, as Slurm hands out
    // NVL72 racks) is the real allocation, not a modelling artefact.
    if fewest == 0 || domains < fewest.saturating_mul(2) {
        return None;
    }
    // Shares of whole trays per domain just below and above share / fewest (at most the
    // domain, as tray divides it).
    let step = fewest.saturating_mul(tray.max(1));
    let below = share / step * tray;
    let above = share.div_ceil(step).saturating_mul(tray).min(domain);
    let nearest = [below, above]
        .into_iter()
        .filter(|&m| m > 0)
        .map(|m| (m.saturating_mul(fewest).saturating_mul(inner), m))
        .filter(|&(g, _)| g != gpus.value)
        .fold(Vec::new(), |mut v, x| {
            if !v.contains(&x) {
                v.push(x);
            }
            v
        });
    Some(SpreadWarning {
        gpus: gpus.value,
        loc: gpus.loc,
        domain_dim: domain_dim.to_string(),
        domains,
        per_domain,
        fewest,
        nearest,
    })
}

/// Multiples of `step` in `1..=max` nearest `value` (at most two: just below and above).
fn nearest_multiples(value: u64, step: u64, max: u64) -> Vec<u64> {
    let step = step.max(1);
    let below = value / step * step;
    let above = below.saturating_add(step);
    let mut out = Vec::new();
    if below > 0 && below != value && below <= max {
        out.push(below);
    }
    if above != value && above <= max {
        out.push(above);
    }
    out
}

/// The divisors of `domain` nearest `value`, at most one below and one above it (a bounded
/// scan, so a huge count costs no more than 2^16 steps each way).
fn divisors_near(domain: u64, value: u64) -> Vec<u64> {
    const SCAN: usize = 1 << 16;
    let below = (1..value.min(domain.saturating_add(1)))
        .rev()
        .take(SCAN)
        .find(|x| domain.is_multiple_of(*x));
    let above = (value.saturating_add(1)..=domain)
        .take(SCAN)
        .find(|x| domain.is_multiple_of(*x));
    below.into_iter().chain(above).collect()
}

/// The largest multiple of `tray` that divides `share` and is at most `domain` (`tray`
/// itself always does when `tray` divides `share`).
fn even_share(share: u64, tray: u64, domain: u64) -> u64 {
    let tray = tray.max(1);
    (1..=domain / tray)
        .rev()
        .take(1 << 20)
        .map(|k| k * tray)
        .find(|&m| share.is_multiple_of(m))
        .unwrap_or(tray)
}

/// Applies the domain keys to `dims` (innermost first, `nodes` already applied). Without a
/// domain key the dims are returned as written. `Ok(Some(_))`: laid out, with W0008.
pub fn apply(dims: &mut [Dim], keys: &DomainKeys) -> Result<Option<SpreadWarning>, DomainProblem> {
    if !keys.any() {
        return Ok(None);
    }
    if let (Some(g), Some(n)) = (&keys.gpus, &keys.nodes) {
        return Err(DomainProblem::GpusAndNodes {
            gpus_loc: g.loc,
            nodes_loc: n.loc,
            gpus: g.value,
        });
    }
    let n = dims.len();
    if n < 2 {
        if let Some(t) = keys.tray.as_ref().or(keys.per_domain.as_ref()) {
            let key = if keys.tray.is_some() {
                "tray"
            } else {
                "per_domain"
            };
            return Err(DomainProblem::NoDomain { key, loc: t.loc });
        }
        // One dim: `gpus` sizes it, as `nodes` does.
        if let (Some(g), Some(last)) = (&keys.gpus, dims.last_mut()) {
            last.size = g.clone();
        }
        return Ok(None);
    }
    let k = n - 2;
    // A product past u64 leaves the dims as written: the world-size limit (E0202) reports it.
    let Some(inner) = dims[..k]
        .iter()
        .try_fold(1u64, |a, d| a.checked_mul(d.size.value))
    else {
        return Ok(None);
    };
    let domain_dim = &dims[k];
    let domain = domain_dim.size.value;
    let tray = match &keys.tray {
        Some(t) if t.value > domain || !domain.is_multiple_of(t.value) => {
            let nearest = divisors_near(domain, t.value);
            return Err(DomainProblem::Tray {
                tray: t.value,
                loc: t.loc,
                domain,
                domain_dim: domain_dim.name.value.clone(),
                domain_loc: domain_dim.size.loc,
                nearest,
            });
        }
        Some(t) => t.value,
        None => domain,
    };
    if let Some(m) = &keys.per_domain {
        if !m.value.is_multiple_of(tray) || m.value > domain {
            return Err(DomainProblem::PerDomain {
                per_domain: m.value,
                loc: m.loc,
                tray,
                domain,
                domain_dim: domain_dim.name.value.clone(),
                domain_loc: domain_dim.size.loc,
                nearest: nearest_multiples(m.value.min(domain), tray, domain)
                    .into_iter()
                    .chain((m.value > domain).then_some(domain / tray * tray))
                    .filter(|&x| x != m.value && x > 0)
                    .take(2)
                    .collect(),
            });
        }
    }
    let Some(gpus) = keys.gpus.clone() else {
        // `per_domain` (or `tray`) alone: the outermost dim keeps its size.
        if let Some(m) = &keys.per_domain {
            dims[k].size = m.clone();
        }
        return Ok(None);
    };
    let (unit, unit_name) = match &keys.per_domain {
        Some(m) => (
            inner.checked_mul(m.value),
            format!("`per_domain {}` shares", m.value),
        ),
        None => (inner.checked_mul(tray), tray_name(tray, domain, inner)),
    };
    let Some(unit) = unit else {
        return Ok(None);
    };
    if unit == 0 || !gpus.value.is_multiple_of(unit) {
        return Err(DomainProblem::NotWhole {
            gpus: gpus.value,
            loc: gpus.loc,
            unit,
            unit_name,
            nearest: nearest_multiples(gpus.value, unit, u64::MAX),
        });
    }
    let share = gpus.value / inner.max(1);
    let (per_domain, warning) = match &keys.per_domain {
        Some(m) => (m.clone(), None),
        None => {
            let m = even_share(share, tray, domain);
            let name = &dims[k].name.value;
            let w = spread_warning(&gpus, name, share, m, tray, domain, inner);
            (Spanned::new(m, gpus.loc), w)
        }
    };
    let domains = share / per_domain.value.max(1);
    dims[k].size = per_domain;
    dims[n - 1].size = Spanned::new(domains, gpus.loc);
    Ok(warning)
}

/// `4-GPU trays`, or `72-GPU domains` when the whole domain is the unit.
fn tray_name(tray: u64, domain: u64, inner: u64) -> String {
    let gpus = tray.saturating_mul(inner);
    if tray == domain {
        format!("{gpus}-GPU domains")
    } else {
        format!("{gpus}-GPU trays")
    }
}

fn or_list(values: &[u64], key: &str) -> String {
    let parts: Vec<String> = values.iter().map(|v| format!("`{key} {v}`")).collect();
    match parts.as_slice() {
        [] => String::new(),
        [a] => a.clone(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

impl DomainProblem {
    /// The diagnostic of this problem, carrying its identity.
    pub fn diagnostic(&self) -> Diagnostic {
        self.render().with_identity(Identity::of(self))
    }

    fn render(&self) -> Diagnostic {
        match self {
            DomainProblem::NotWhole {
                gpus,
                loc,
                unit,
                unit_name,
                nearest,
            } => Diagnostic::new(
                Code::E0313,
                format!("`gpus {gpus}` is not a whole number of {unit_name}"),
                *loc,
                format!("not a multiple of {unit}"),
            )
            .with_help(if nearest.is_empty() {
                format!("use a multiple of {unit} GPUs")
            } else {
                format!("use {}", or_list(nearest, "gpus"))
            }),
            DomainProblem::PerDomain {
                per_domain,
                loc,
                tray,
                domain,
                domain_dim,
                domain_loc,
                nearest,
            } => {
                let why = if per_domain > domain {
                    format!("more than the {domain} GPUs of a `{domain_dim}` domain")
                } else {
                    format!("not a whole number of {tray}-GPU trays")
                };
                Diagnostic::new(
                    Code::E0314,
                    format!("`per_domain {per_domain}` is {why}"),
                    *loc,
                    format!("{per_domain} GPUs of each domain"),
                )
                .with_secondary(
                    *domain_loc,
                    format!("{domain} GPUs in dim `{domain_dim}`"),
                )
                .with_help(if nearest.is_empty() {
                    format!("use a multiple of {tray} up to {domain}")
                } else {
                    format!("use {}", or_list(nearest, "per_domain"))
                })
            }
            DomainProblem::Tray {
                tray,
                loc,
                domain,
                domain_dim,
                domain_loc,
                nearest,
            } => Diagnostic::new(
                Code::E0314,
                format!("`tray {tray}` does not divide the {domain}-GPU `{domain_dim}` domain"),
                *loc,
                format!("{tray} GPUs a tray"),
            )
            .with_secondary(
                *domain_loc,
                format!("{domain} GPUs in dim `{domain_dim}`"),
            )
            .with_help(format!("use {}", or_list(nearest, "tray"))),
            DomainProblem::NoDomain { key, loc } => Diagnostic::new(
                Code::E0314,
                format!("`{key}` needs an NVLink domain inside the outermost dim"),
                *loc,
                "the cluster has one dim",
            )
            .with_help(format!(
                "add the scale-up dim first (e.g. `dim nvlink fc 72 900GB/s 1us`), or remove `{key}`"
            )),
            DomainProblem::GpusAndNodes {
                gpus_loc,
                nodes_loc,
                gpus,
            } => Diagnostic::new(
                Code::E0314,
                "`gpus` and `nodes` both set the size of the outermost dim",
                *nodes_loc,
                "written here",
            )
            .with_secondary(*gpus_loc, format!("`gpus {gpus}` sizes it too"))
            .with_help(format!("remove `nodes` and keep `gpus {gpus}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ty::{BytesPerSec, Seconds, Topology};

    fn loc() -> Loc {
        Loc::default()
    }

    fn s(v: u64) -> Spanned<u64> {
        Spanned::new(v, loc())
    }

    fn dim(name: &str, size: u64) -> Dim {
        Dim {
            name: Spanned::new(name.into(), loc()),
            topology: Spanned::new(Topology::FullyConnected, loc()),
            size: s(size),
            bandwidth: Spanned::new(BytesPerSec(1e9), loc()),
            latency: Spanned::new(Seconds(0.0), loc()),
            efficiency: None,
            algorithm: None,
            fabric: Default::default(),
            loc: loc(),
        }
    }

    fn nvl72() -> Vec<Dim> {
        vec![dim("nvlink", 72), dim("ib", 1)]
    }

    fn sizes(dims: &[Dim]) -> Vec<u64> {
        dims.iter().map(|d| d.size.value).collect()
    }

    fn keys(gpus: Option<u64>, per_domain: Option<u64>, tray: Option<u64>) -> DomainKeys {
        DomainKeys {
            gpus: gpus.map(s),
            per_domain: per_domain.map(s),
            tray: tray.map(s),
            nodes: None,
        }
    }

    #[test]
    fn gpus_512_on_nvl72_trays_is_eight_racks_of_64() {
        let mut d = nvl72();
        apply(&mut d, &keys(Some(512), None, Some(4))).unwrap();
        assert_eq!(sizes(&d), [64, 8]);
    }

    #[test]
    fn gpus_within_one_rack_uses_one_partial_domain() {
        let mut d = nvl72();
        apply(&mut d, &keys(Some(64), None, Some(4))).unwrap();
        assert_eq!(sizes(&d), [64, 1]);
        let mut d = nvl72();
        apply(&mut d, &keys(Some(144), None, Some(4))).unwrap();
        assert_eq!(sizes(&d), [72, 2]);
    }

    #[test]
    fn every_multiple_of_the_tray_is_a_valid_job() {
        for gpus in (4..=2048).step_by(4) {
            let mut d = nvl72();
            apply(&mut d, &keys(Some(gpus), None, Some(4))).unwrap();
            let (m, r) = (d[0].size.value, d[1].size.value);
            assert_eq!(m * r, gpus);
            assert!(m % 4 == 0 && m <= 72, "{gpus}: {m} x {r}");
        }
    }

    #[test]
    fn explicit_per_domain_sets_the_share_and_the_rack_count() {
        let mut d = nvl72();
        apply(&mut d, &keys(Some(256), Some(32), Some(4))).unwrap();
        assert_eq!(sizes(&d), [32, 8]);
    }

    #[test]
    fn gpus_off_the_tray_is_e0313_with_the_nearest_counts() {
        let mut d = nvl72();
        let e = apply(&mut d, &keys(Some(510), None, Some(4))).unwrap_err();
        assert!(
            matches!(&e, DomainProblem::NotWhole { unit: 4, nearest, .. } if nearest == &[508, 512])
        );
        let diag = e.diagnostic();
        assert_eq!(diag.code, Code::E0313);
        assert_eq!(diag.help.as_deref(), Some("use `gpus 508` or `gpus 512`"));
    }

    #[test]
    fn without_a_tray_the_unit_is_the_whole_domain() {
        let mut d = vec![dim("nvlink", 8), dim("ib", 1)];
        apply(&mut d, &keys(Some(64), None, None)).unwrap();
        assert_eq!(sizes(&d), [8, 8]);
        let e = apply(&mut d, &keys(Some(100), None, None)).unwrap_err();
        assert_eq!(
            e.diagnostic().help.as_deref(),
            Some("use `gpus 96` or `gpus 104`")
        );
    }

    #[test]
    fn per_domain_off_the_tray_or_past_the_domain_is_e0314() {
        let mut d = nvl72();
        let e = apply(&mut d, &keys(None, Some(66), Some(4))).unwrap_err();
        assert_eq!(e.diagnostic().code, Code::E0314);
        assert_eq!(
            e.diagnostic().help.as_deref(),
            Some("use `per_domain 64` or `per_domain 68`")
        );
        let e = apply(&mut d, &keys(None, Some(80), Some(4))).unwrap_err();
        assert_eq!(e.diagnostic().help.as_deref(), Some("use `per_domain 72`"));
    }

    #[test]
    fn a_tray_that_does_not_divide_the_domain_is_e0314() {
        let mut d = nvl72();
        let e = apply(&mut d, &keys(Some(512), None, Some(5))).unwrap_err();
        assert_eq!(
            e.diagnostic().help.as_deref(),
            Some("use `tray 4` or `tray 6`")
        );
    }

    #[test]
    fn gpus_with_nodes_is_e0314() {
        let mut d = nvl72();
        let mut k = keys(Some(512), None, Some(4));
        k.nodes = Some(s(8));
        let e = apply(&mut d, &k).unwrap_err();
        assert_eq!(e.diagnostic().code, Code::E0314);
    }

    #[test]
    fn huge_counts_do_not_overflow() {
        let mut d = vec![dim("a", u64::MAX), dim("nvlink", 72), dim("ib", 1)];
        // Left as written, for the world-size limit (E0202) to report.
        assert_eq!(
            apply(&mut d, &keys(Some(u64::MAX), None, Some(4))),
            Ok(None)
        );
        assert_eq!(sizes(&d), [u64::MAX, 72, 1]);
    }

    #[test]
    fn an_uneven_count_spread_over_more_racks_than_needed_is_w0008() {
        let mut d = nvl72();
        let w = apply(&mut d, &keys(Some(100), None, Some(4)))
            .unwrap()
            .expect("a warning");
        assert_eq!(sizes(&d), [20, 5]);
        assert_eq!((w.domains, w.per_domain, w.fewest), (5, 20, 2));
        let diag = w.diagnostic();
        assert_eq!(diag.code, Code::W0008);
        assert_eq!(
            diag.help.as_deref(),
            Some("use `gpus 96` (2 domains of 48) or `gpus 104` (2 domains of 52)")
        );
    }

    #[test]
    fn an_even_spread_over_the_fewest_racks_says_nothing() {
        for gpus in [8, 64, 72, 144, 256, 512, 1024] {
            let mut d = nvl72();
            assert_eq!(
                apply(&mut d, &keys(Some(gpus), None, Some(4))),
                Ok(None),
                "{gpus}"
            );
        }
    }
}
