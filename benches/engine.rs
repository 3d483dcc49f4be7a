//! Engine benchmark: a synthetic 16-stage 1F1B pipeline × 128 microbatches with P2P between
//! stages and two tensor-parallel all-reduces per layer and pass, on a two-dim network
//! (NVLink-like fc dim of 8, switch dim of 16). Reports wall time and events per second for
//! the full world and for one representative per symmetry class.
//!
//! Run: `cargo bench --bench engine` (plain `std::time` measurement, best of a few runs).

use std::time::{Duration, Instant};
use venusc::base::{Bytes, BytesPerSec, Seconds, Topology};
use venusc::engine::{run_trace, NetDim, Network, Options, Sharing};
use venusc::trace::synthetic::Pipeline;
use venusc::trace::Ps;

fn network(tp: u32, pp: u32) -> Network {
    let dim = |size, topology, gbps: f64, us: f64| {
        NetDim::new(topology, size, BytesPerSec(gbps * 1e9), Seconds(us * 1e-6))
    };
    Network::from_dims(&[
        dim(tp, Topology::FullyConnected, 450.0, 1.0),
        dim(pp, Topology::Switch, 50.0, 5.0),
    ])
    .expect("valid network")
}

fn pipeline(symmetric: bool) -> Pipeline {
    Pipeline {
        stages: 16,
        tp: 8,
        microbatches: 128,
        layers: 4,
        forward: Ps::from_us(8_000),
        backward: Ps::from_us(16_000),
        p2p_bytes: Bytes(16 << 20),
        tp_bytes: Bytes(32 << 20),
        symmetric,
    }
}

fn best_of<T>(runs: u32, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t0 = Instant::now();
        let v = f();
        best = best.min(t0.elapsed());
        out = Some(v);
    }
    (best, out.expect("at least one run"))
}

fn case(name: &str, symmetric: bool, sharing: Sharing) {
    let p = pipeline(symmetric);
    let net = network(p.tp, p.stages);
    let (build, trace) = best_of(3, || p.build().expect("valid trace"));
    let opts = Options { sharing };
    let (sim, timeline) = best_of(3, || run_trace(&trace, &net, &opts).expect("no deadlock"));
    let events = timeline.events();
    println!(
        "{name:<34} ranks {:>4}  nodes {:>8}  events {:>8}  build {:>8.2} ms  simulate {:>8.2} ms  {:>6.2} M events/s  makespan {}",
        trace.ranks().len(),
        trace.node_count(),
        events,
        build.as_secs_f64() * 1e3,
        sim.as_secs_f64() * 1e3,
        events as f64 / sim.as_secs_f64() / 1e6,
        timeline.makespan(),
    );
}

fn main() {
    case("16pp x 8tp x 128mb, all ranks", false, Sharing::MaxMinFair);
    case(
        "16pp x 8tp x 128mb, all ranks, no sharing",
        false,
        Sharing::Off,
    );
    case("16pp x 8tp x 128mb, symmetric", true, Sharing::MaxMinFair);
}
