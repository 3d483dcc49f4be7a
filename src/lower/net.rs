//! The network a scenario's cluster describes, as the engine's plain dims.
//!
//! Input: the plan's [`ClusterSpec`]. Output: an engine [`Network`] (sizes, topologies,
//! achieved bandwidths, latencies, pinned algorithms), or the [`NetworkError`] that makes it
//! unbuildable. Invariant: the engine never sees the cluster's names or definitions.

use crate::base::{BytesPerSec, CollectiveAlgorithm};
use crate::engine::{Algorithm, NetDim, Network, NetworkError};
use crate::plan::ClusterSpec;

/// The cluster's dims with their topology defaults.
pub fn network(c: &ClusterSpec) -> Result<Network, NetworkError> {
    let dims = c
        .dims
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let size = u32::try_from(d.size).map_err(|_| NetworkError::TooLarge)?;
            if size == 0 {
                return Err(NetworkError::ZeroSize { dim: i });
            }
            // The achieved bus bandwidth: the link's peak × the dim's efficiency.
            let efficiency = d.efficiency.map_or(1.0, |e| e.0);
            Ok(NetDim {
                size,
                topology: d.topology,
                bandwidth: BytesPerSec(d.bandwidth.0 * efficiency),
                latency: d.latency,
                algorithm: d.algorithm.map(|a| match a {
                    CollectiveAlgorithm::Ring => Algorithm::Ring,
                    CollectiveAlgorithm::Direct => Algorithm::Direct,
                    CollectiveAlgorithm::HalvingDoubling => Algorithm::HalvingDoubling,
                    CollectiveAlgorithm::Tree => Algorithm::DoubleBinaryTree,
                }),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Network::new(dims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::{Bytes, FlopsPerSec, GpuArch, Seconds, Topology};
    use crate::plan::{DimSpec, GpuSpec};

    fn dim(name: &str, topology: Topology, size: u64, gbps: f64, lat: f64) -> DimSpec {
        DimSpec {
            name: name.to_string(),
            topology,
            size,
            bandwidth: BytesPerSec(gbps * 1e9),
            latency: Seconds(lat),
            efficiency: None,
            algorithm: None,
        }
    }

    #[test]
    fn network_from_cluster_keeps_dims_innermost_first() {
        let gpu = GpuSpec {
            name: "h100".into(),
            arch: GpuArch::Hopper,
            peak: FlopsPerSec(989e12),
            memory: Bytes(80 << 30),
            mem_bw: BytesPerSec(3.35e12),
            fp8_peak: None,
        };
        let cluster = ClusterSpec {
            name: None,
            gpu,
            dims: vec![
                dim("nvlink", Topology::FullyConnected, 8, 450.0, 0.0),
                dim("ib", Topology::Switch, 4, 50.0, 5e-6),
            ],
        };
        let n = network(&cluster).unwrap();
        assert_eq!(n.world(), 32);
        assert_eq!((n.coord(13, 0), n.coord(13, 1)), (5, 1));
        assert_eq!(n.dim_between(3, 5), Some(0));
        assert_eq!(n.dim_between(3, 11), Some(1));
        assert_eq!(n.dim_between(7, 7), None);
        assert_eq!(n.dims()[1].bandwidth, BytesPerSec(50e9));
    }
}
