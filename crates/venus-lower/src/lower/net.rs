//! The cluster's network as plain dims: [`ClusterSpec`] → engine [`NetDim`]s and [`Network`].
//!
//! Input: the scenario's plain cluster (dims innermost first). Output: one [`NetDim`] per dim,
//! in the same order, carrying only what changes a simulation (topology, size, link bandwidth,
//! latency, efficiency, algorithm override); names stay behind, so the engine never sees a
//! definition. Invariant: an unwritten efficiency is 100% and an unwritten algorithm is the
//! topology's default, as the cluster block documents.

use venus_base::base::Ratio;
use venus_plan::plan::ClusterSpec;
use venus_sim::engine::{NetDim, Network, NetworkError};
use venus_sim::trace::RankId;

/// The cluster's dims as plain data, innermost first.
pub fn dims(c: &ClusterSpec) -> Result<Vec<NetDim>, NetworkError> {
    c.dims
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let size = u32::try_from(d.size).map_err(|_| NetworkError::TooLarge)?;
            if size == 0 {
                return Err(NetworkError::ZeroSize { dim: i });
            }
            Ok(NetDim {
                topology: d.topology,
                size,
                bandwidth: d.bandwidth,
                latency: d.latency,
                efficiency: d.efficiency.unwrap_or(Ratio(1.0)),
                algorithm: d.algorithm,
                fabric: d.fabric,
            })
        })
        .collect()
}

/// The cluster's network with its topology defaults and its slow links: a `slow_link` node's
/// GPUs reach the item's share of bandwidth on the outermost dim (their scale-out NIC).
pub fn network(c: &ClusterSpec) -> Result<Network, NetworkError> {
    let outermost = c.dims.len().saturating_sub(1);
    let slow: Vec<(RankId, usize, Ratio)> = c
        .slow_links()
        .into_iter()
        .map(|s| (RankId(s.rank), outermost, s.speed))
        .collect();
    Ok(Network::from_dims(&dims(c)?)?.with_slow_links(&slow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_base::base::{
        Bytes, BytesPerSec, CollectiveAlgorithm, FlopsPerSec, GpuArch, Seconds, Topology,
    };
    use venus_plan::plan::{DimSpec, GpuSpec};
    use venus_sim::engine::Algorithm;
    use venus_sim::trace::CollectiveKind;
    use venus_sim::trace::RankId;

    fn dim(name: &str, topology: Topology, size: u64, gbps: f64, lat: f64) -> DimSpec {
        DimSpec {
            name: name.to_string(),
            topology,
            size,
            bandwidth: BytesPerSec(gbps * 1e9),
            latency: Seconds(lat),
            efficiency: None,
            algorithm: None,
            fabric: Default::default(),
        }
    }

    fn cluster(dims: Vec<DimSpec>) -> ClusterSpec {
        let gpu = GpuSpec {
            name: "h100".into(),
            arch: GpuArch::Hopper,
            peak: FlopsPerSec(989e12),
            memory: Bytes(80 << 30),
            mem_bw: BytesPerSec(3.35e12),
            fp8_peak: None,
            fp4_peak: None,
            gemm: Default::default(),
            sms: 132,
        };
        ClusterSpec {
            name: None,
            gpu,
            dims,
            reserve: None,
            slow: Vec::new(),
            reliability: Default::default(),
        }
    }

    #[test]
    fn network_from_cluster_keeps_dims_innermost_first() {
        let c = cluster(vec![
            dim("nvlink", Topology::FullyConnected, 8, 450.0, 0.0),
            dim("ib", Topology::Switch, 4, 50.0, 5e-6),
        ]);
        let n = network(&c).unwrap();
        assert_eq!(n.world(), 32);
        assert_eq!((n.coord(RankId(13), 0), n.coord(RankId(13), 1)), (5, 1));
        assert_eq!(n.dim_between(RankId(3), RankId(5)), Some(0));
        assert_eq!(n.dim_between(RankId(3), RankId(11)), Some(1));
        assert_eq!(n.dim_between(RankId(7), RankId(7)), None);
        assert_eq!(n.dims()[1].bandwidth, BytesPerSec(50e9));
    }

    #[test]
    fn efficiency_and_algorithm_carry_over_as_plain_data() {
        let mut d = dim("ib", Topology::Switch, 4, 50.0, 5e-6);
        d.efficiency = Some(Ratio(0.8));
        d.algorithm = Some(CollectiveAlgorithm::Tree);
        let dims = dims(&cluster(vec![d])).unwrap();
        assert_eq!(
            dims,
            [NetDim {
                topology: Topology::Switch,
                size: 4,
                bandwidth: BytesPerSec(50e9),
                latency: Seconds(5e-6),
                efficiency: Ratio(0.8),
                algorithm: Some(CollectiveAlgorithm::Tree),
                fabric: Default::default(),
            }]
        );
        let n = Network::from_dims(&dims).unwrap();
        assert_eq!(
            n.algorithm_for(0, CollectiveKind::AllGather, 4, Default::default()),
            Algorithm::DoubleBinaryTree
        );
    }

    #[test]
    fn zero_and_oversized_dims_are_rejected() {
        let c = cluster(vec![dim("a", Topology::Ring, 0, 1.0, 0.0)]);
        assert_eq!(dims(&c), Err(NetworkError::ZeroSize { dim: 0 }));
        let c = cluster(vec![dim("a", Topology::Ring, 1 << 33, 1.0, 0.0)]);
        assert_eq!(dims(&c), Err(NetworkError::TooLarge));
    }
}
