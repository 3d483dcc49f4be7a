//! The cluster's network as plain dims: `ty::Cluster` → engine [`NetDim`]s and [`Network`].
//!
//! Input: a typed cluster (dims innermost first, with source locations). Output: one
//! [`NetDim`] per dim, in the same order, carrying only what changes a simulation (topology,
//! size, link bandwidth, latency, efficiency, algorithm override); names and locations stay
//! behind, so the engine never sees a `ty` type. Invariant: an unwritten efficiency is 100%
//! and an unwritten algorithm is the topology's default, as the cluster block documents.

use crate::base::Ratio;
use crate::engine::{NetDim, Network, NetworkError};
use crate::ty::Cluster;

/// The cluster's dims as plain data, innermost first.
pub fn dims(c: &Cluster) -> Result<Vec<NetDim>, NetworkError> {
    c.dims
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let size = u32::try_from(d.size.value).map_err(|_| NetworkError::TooLarge)?;
            if size == 0 {
                return Err(NetworkError::ZeroSize { dim: i });
            }
            Ok(NetDim {
                topology: d.topology.value,
                size,
                bandwidth: d.bandwidth.value,
                latency: d.latency.value,
                efficiency: d.efficiency.as_ref().map_or(Ratio(1.0), |e| e.value),
                algorithm: d.algorithm.as_ref().map(|a| a.value),
            })
        })
        .collect()
}

/// The cluster's network with its topology defaults.
pub fn network(c: &Cluster) -> Result<Network, NetworkError> {
    Network::from_dims(&dims(c)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::{Bytes, BytesPerSec, CollectiveAlgorithm, FlopsPerSec, Seconds, Topology};
    use crate::diag::{FileId, Loc, Span};
    use crate::engine::Algorithm;
    use crate::trace::CollectiveKind;
    use crate::ty::{Dim, Gpu, Spanned};

    fn sp<T>(v: T) -> Spanned<T> {
        Spanned::new(v, Loc::new(FileId(0), Span::default()))
    }

    fn dim(name: &str, topology: Topology, size: u64, gbps: f64, lat: f64) -> Dim {
        Dim {
            name: sp(name.to_string()),
            topology: sp(topology),
            size: sp(size),
            bandwidth: sp(BytesPerSec(gbps * 1e9)),
            latency: sp(Seconds(lat)),
            efficiency: None,
            algorithm: None,
            loc: Loc::new(FileId(0), Span::default()),
        }
    }

    fn cluster(dims: Vec<Dim>) -> Cluster {
        let loc = Loc::new(FileId(0), Span::default());
        let gpu = Gpu {
            name: "h100".into(),
            loc,
            peak: sp(FlopsPerSec(989e12)),
            memory: sp(Bytes(80 << 30)),
            mem_bw: sp(BytesPerSec(3.35e12)),
            fp8_peak: None,
        };
        Cluster {
            name: None,
            loc,
            gpu,
            gpu_loc: loc,
            dims,
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
        assert_eq!((n.coord(13, 0), n.coord(13, 1)), (5, 1));
        assert_eq!(n.dim_between(3, 5), Some(0));
        assert_eq!(n.dim_between(3, 11), Some(1));
        assert_eq!(n.dim_between(7, 7), None);
        assert_eq!(n.dims()[1].bandwidth, BytesPerSec(50e9));
    }

    #[test]
    fn efficiency_and_algorithm_carry_over_as_plain_data() {
        let mut d = dim("ib", Topology::Switch, 4, 50.0, 5e-6);
        d.efficiency = Some(sp(Ratio(0.8)));
        d.algorithm = Some(sp(CollectiveAlgorithm::Tree));
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
