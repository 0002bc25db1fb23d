//! Cost of one scheduling decision: `Scheduler::schedule` on a busy connection view with 2, 4
//! and 8 subflows, for every registered base scheduler and every composition with the
//! extensions (`reference/schedulers.md`; STYLE §8.6).
//!
//! The view is fixed (heterogeneous RTTs, half-full windows, data waiting, a few chunks in
//! flight), so the number measures the decision logic only, not the connection around it.
//! Stateful schedulers keep their state between iterations, as they would in a connection.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use mpsched_proto::sched::registry::{all_compositions, build};
use mpsched_proto::sched::{ConnView, SubflowView, UnackedChunk};

const MSS: u64 = 1448;

fn subflows(n: usize) -> Vec<SubflowView> {
    (0..n)
        .map(|i| {
            let srtt_ns = (10 + 17 * i as u64) * 1_000_000;
            let cwnd_bytes = (10 + 3 * i as u64) * MSS;
            SubflowView {
                id: i,
                path_index: i,
                established: true,
                backup: i == n - 1 && n > 2,
                has_rtt_sample: true,
                srtt_ns,
                rttvar_ns: srtt_ns / 8,
                min_rtt_ns: srtt_ns * 9 / 10,
                last_rtt_ns: srtt_ns,
                rto_ns: 200_000_000 + srtt_ns,
                mss_bytes: MSS,
                cwnd_bytes,
                ssthresh_bytes: 8 * MSS,
                in_flight_bytes: cwnd_bytes / 2,
                queued_bytes: 0,
                segs_in_use: 0,
                pacing_rate_bps: cwnd_bytes * 8 * 1_000_000_000 / srtt_ns * 12 / 10,
                bytes_acked: 1_000_000 * (i as u64 + 1),
                bytes_sent: 1_100_000 * (i as u64 + 1),
                ..SubflowView::default()
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("sched_decision");
    for n in [2usize, 4, 8] {
        let sfs = subflows(n);
        let unacked: Vec<UnackedChunk> = (0..16)
            .map(|k| UnackedChunk {
                dsn: k * 4 * MSS,
                len: 4 * MSS,
                sent_on_mask: 1 << (k as usize % n),
            })
            .collect();
        let next_dsn = 16 * 4 * MSS;
        for name in all_compositions() {
            let mut sched = build(&name, &serde_json::json!({})).expect("registered");
            let mut out = Vec::with_capacity(8);
            let mut now_ns = 1_000_000_000u64;
            group.bench_with_input(BenchmarkId::new(name.as_str(), n), &n, |b, _| {
                b.iter(|| {
                    now_ns += 1_000;
                    let view = ConnView {
                        now_ns,
                        subflows: &sfs,
                        unsent_bytes: 10_000_000,
                        app_done: false,
                        next_dsn,
                        data_acked: 0,
                        unacked: &unacked,
                        reinject_queue: &[],
                        peer_rwnd_bytes: 4_000_000,
                    };
                    out.clear();
                    sched.schedule(black_box(&view), &mut out);
                    black_box(out.len())
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
