//! What the records say at the end of a flow: the sender's counters are final.

mod common;
use common::*;
use mpsched_sim::config::*;
use mpsched_sim::run::run;

#[test]
fn a_completed_flow_records_every_byte_as_acknowledged() {
    // The flow completes when its last byte reaches the receiving application, but the sender
    // learns it one (half) round trip later, from the last ACK. The subflow rows must show
    // that final state: every byte acknowledged (it once showed 43 440 of 65 536 bytes).
    for (protocol, paths) in [(Protocol::Tcp, vec![0]), (Protocol::Mptcp, vec![0, 1])] {
        let links = vec![
            link("a.down", 50_000_000, 10 * MS, 100),
            link("a.up", 50_000_000, 10 * MS, 100),
            link("b.down", 20_000_000, 30 * MS, 100),
            link("b.up", 20_000_000, 30 * MS, 100),
        ];
        let paths_cfg = vec![
            PathConfig { name: "a".into(), down: vec![0], up: vec![1] },
            PathConfig { name: "b".into(), down: vec![2], up: vec![3] },
        ];
        let mut cfg = scenario(links, paths_cfg, 10 * S);
        cfg.transports.push(transport(protocol, "minrtt", "cubic", paths));
        for (i, size) in [65_536u64, 1 << 20].into_iter().enumerate() {
            cfg.flows.push(sized(i as u64, 0, i as u64 * 2 * S, size));
        }
        let rec = run(&cfg).unwrap();
        assert_eq!(bools(&rec, "flows", "completed"), vec![true, true]);
        let flow = u64s(&rec, "subflows", "flow_id");
        let acked = u64s(&rec, "subflows", "bytes_acked");
        for (id, size) in [(0u64, 65_536u64), (1, 1 << 20)] {
            let sum: u64 = (0..flow.len()).filter(|&i| flow[i] == id).map(|i| acked[i]).sum();
            assert_eq!(sum, size, "{protocol:?} flow {id}: bytes_acked over its subflows");
        }
        // The flow's completion time is still the receiver's last delivery (64 KiB over the
        // 20 ms path: handshake plus four round trips of slow start).
        let fct = opt_u64s(&rec, "flows", "fct_ns")[0].unwrap();
        assert!(fct < 100 * MS, "{protocol:?}: fct {fct}");
    }
}
