//! BLEST: blocking estimation.
//!
//! Sources: Ferlin, Alay, Mehani, Boreli, "BLEST: Blocking estimation-based MPTCP scheduler for
//! heterogeneous networks", IFIP Networking 2016; OOT `net/mptcp/mptcp_blest.c` (module 0.95);
//! `reference/schedulers.md` §2.7.
//!
//! When minRTT picks a slower subflow `s` (the fastest `f` is cwnd-full), BLEST estimates how
//! long a segment sent now on `s` lingers (`linger`, interpolated between `s`'s minimum and
//! maximum sRTT by its window occupancy) and how many bytes `f` could send meanwhile
//! (`fast_bytes`, slow-start doubling or Reno growth per RTT of `f`, times λ). If those bytes
//! would not fit the peer's window once `s`'s outstanding data is counted
//! (`fast_bytes > rwnd − (segment + outstanding on s)`), sending on `s` would block the fast
//! path, so BLEST does not send. λ adapts once per minimum sRTT of `s`: +0.04 after
//! head-of-line blocking happened, −0.01 otherwise, clamped to [1.0, 1.3].
//!
//! Decisions: the kernel sets its `retrans_flag` inside its copy of the RP routine when new
//! data is blocked by the receive window; here BLEST sets it itself whenever it sees that
//! condition, so it does not depend on `+rp`. A slow subflow gets one segment per call so the
//! estimate is redone per segment, as the kernel does per skb. The per-subflow minimum and
//! maximum sRTT are tracked over the connection from the views BLEST is shown. The kernel
//! module also runs opportunistic retransmission and penalisation: that is `"blest+rp"`.

use serde::{Deserialize, Serialize};

use super::common::{
    fastest_usable, min_rtt_select, new_data_burst, new_data_fits_window, rwnd_blocked,
    serve_reinject, CheckConfig,
};
use super::{Action, ConnView, Scheduler, SubflowView};

/// BLEST parameters (the kernel keeps λ × 1000 as an integer; so do we).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Initial λ × 1000. Default 1200 (OOT `lambda = 12` tenths).
    pub lambda_milli: u64,
    /// Lower bound of λ × 1000. Default 1000 (OOT `min_lambda`).
    pub min_lambda_milli: u64,
    /// Upper bound of λ × 1000. Default 1300 (OOT `max_lambda`).
    pub max_lambda_milli: u64,
    /// λ × 1000 decrease per slow-path RTT without blocking. Default 10 (`dyn_lambda_good`).
    pub dyn_lambda_good_milli: u64,
    /// λ × 1000 increase per slow-path RTT with blocking. Default 40 (`dyn_lambda_bad`).
    pub dyn_lambda_bad_milli: u64,
}

impl CheckConfig for Config {
    fn check(&self) -> Result<(), String> {
        if self.min_lambda_milli > self.max_lambda_milli || self.min_lambda_milli == 0 {
            return Err("need 0 < min_lambda_milli <= max_lambda_milli".into());
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            lambda_milli: 1200,
            min_lambda_milli: 1000,
            max_lambda_milli: 1300,
            dyn_lambda_good_milli: 10,
            dyn_lambda_bad_milli: 40,
        }
    }
}

/// BLEST state.
#[derive(Debug, Clone)]
pub struct Blest {
    cfg: Config,
    lambda_milli: u64,
    retrans_flag: bool,
    last_lambda_update_ns: Option<u64>,
    /// Per subflow: (min sRTT, max sRTT) seen, ns.
    srtt_range_ns: Vec<Option<(u64, u64)>>,
}

/// `ssthresh` at or above this counts as "infinite" (initial slow start).
const SSTHRESH_INFINITE: u64 = u64::MAX / 2;
/// Cap on predicted slow-start rounds (OOT `min(num_rtts, 16)`), avoids overflow.
const MAX_SS_ROUNDS: u64 = 16;

impl Default for Blest {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl Blest {
    /// Builds the scheduler.
    pub fn new(cfg: Config) -> Self {
        let lambda_milli = cfg.lambda_milli.clamp(
            cfg.min_lambda_milli,
            cfg.max_lambda_milli.max(cfg.min_lambda_milli),
        );
        Self {
            cfg,
            lambda_milli,
            retrans_flag: false,
            last_lambda_update_ns: None,
            srtt_range_ns: Vec::new(),
        }
    }

    /// Current λ × 1000.
    pub fn lambda_milli(&self) -> u64 {
        self.lambda_milli
    }

    fn range(&self, sf: &SubflowView) -> (u64, u64) {
        self.srtt_range_ns
            .get(sf.id)
            .copied()
            .flatten()
            .unwrap_or((sf.srtt_ns, sf.srtt_ns))
    }

    fn update_lambda(&mut self, s: &SubflowView, now_ns: u64) {
        let (min_srtt, _) = self.range(s);
        if let Some(t) = self.last_lambda_update_ns {
            if now_ns.saturating_sub(t) < min_srtt {
                return;
            }
        }
        self.lambda_milli = if self.retrans_flag {
            self.lambda_milli
                .saturating_add(self.cfg.dyn_lambda_bad_milli)
        } else {
            self.lambda_milli
                .saturating_sub(self.cfg.dyn_lambda_good_milli)
        };
        self.lambda_milli = self.lambda_milli.clamp(
            self.cfg.min_lambda_milli,
            self.cfg.max_lambda_milli.max(self.cfg.min_lambda_milli),
        );
        self.retrans_flag = false;
        self.last_lambda_update_ns = Some(now_ns);
    }

    /// Time until a segment sent now on `s` is acknowledged, ns.
    fn estimate_linger_ns(&self, s: &SubflowView) -> u64 {
        let (min_srtt, max_srtt) = self.range(s);
        let infl = s.in_flight_bytes + s.mss_bytes;
        let est = if infl >= s.cwnd_bytes || s.cwnd_bytes == 0 {
            max_srtt
        } else {
            min_srtt + super::common::mul_div(max_srtt - min_srtt, infl, s.cwnd_bytes)
        };
        s.srtt_ns.max(est)
    }

    /// Bytes `f` can send during `linger_ns`, inflated by λ.
    fn estimate_fast_bytes(&self, f: &SubflowView, linger_ns: u64) -> u128 {
        let (min_srtt, max_srtt) = self.range(f);
        let avg = (min_srtt / 2) + (max_srtt / 2);
        let mss = f.mss_bytes.max(1) as u128;
        let mut rounds = linger_ns.checked_div(avg).map_or(1, |r| r + 1) as u128;
        let cwnd = (f.cwnd_bytes / f.mss_bytes.max(1)) as u128;
        let pkts = if f.ssthresh_bytes >= SSTHRESH_INFINITE {
            rounds = rounds.min(MAX_SS_ROUNDS as u128);
            cwnd * ((1u128 << rounds) - 1)
        } else {
            let w = cwnd.max((f.ssthresh_bytes / f.mss_bytes.max(1)) as u128 + 1);
            (w + (rounds - 1) / 2) * rounds
        };
        pkts.saturating_mul(mss)
            .saturating_mul(self.lambda_milli as u128)
            / 1000
    }
}

impl Scheduler for Blest {
    fn name(&self) -> &'static str {
        "blest"
    }

    fn schedule(&mut self, view: &ConnView<'_>, out: &mut Vec<Action>) {
        if self.srtt_range_ns.len() < view.subflows.len() {
            self.srtt_range_ns.resize(view.subflows.len(), None);
        }
        for sf in view
            .subflows
            .iter()
            .filter(|s| s.usable() && s.has_rtt_sample)
        {
            let r = &mut self.srtt_range_ns[sf.id];
            *r = Some(match *r {
                None => (sf.srtt_ns, sf.srtt_ns),
                Some((lo, hi)) => (lo.min(sf.srtt_ns), hi.max(sf.srtt_ns)),
            });
        }
        if rwnd_blocked(view) {
            self.retrans_flag = true; // head-of-line blocking is happening
        }
        if serve_reinject(view, out, |mask| min_rtt_select(view.subflows, mask)).is_some() {
            return;
        }
        if view.unsent_bytes == 0 {
            return;
        }
        let Some(s_id) = min_rtt_select(view.subflows, 0) else {
            return;
        };
        let s = &view.subflows[s_id];
        if !new_data_fits_window(view, s.mss_bytes) {
            return;
        }
        let mut bytes = new_data_burst(view, s);
        match fastest_usable(view.subflows) {
            Some(f_id) if f_id != s_id => {
                let f = &view.subflows[f_id];
                self.update_lambda(s, view.now_ns);
                let linger_ns = self.estimate_linger_ns(s);
                let fast_bytes = self.estimate_fast_bytes(f, linger_ns);
                let seg = bytes.min(s.mss_bytes.max(1));
                let slow_bytes = (seg + s.in_flight_bytes + s.queued_bytes) as u128;
                let avail = (view.peer_rwnd_bytes as u128).saturating_sub(slow_bytes);
                if fast_bytes > avail {
                    return; // sending on s would block the fast subflow
                }
                bytes = seg;
            }
            _ => {}
        }
        if bytes > 0 {
            out.push(Action::SendNew {
                subflow: s_id,
                max_bytes: bytes,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::*;
    use super::*;

    /// Fast subflow 0 (10 ms, cwnd 10 full, in congestion avoidance), slow 1 (100 ms, idle).
    fn paths() -> [SubflowView; 2] {
        let mut s = [sf(0, 10, 10), sf(1, 100, 10)];
        s[0].in_flight_bytes = s[0].cwnd_bytes;
        s[0].ssthresh_bytes = 10 * MSS;
        s
    }

    #[test]
    fn refuses_the_slow_path_when_it_would_block_the_receive_window() {
        let s = paths();
        let mut v = conn(&s, 1_000_000);
        // In one slow RTT (100 ms = 10 fast RTTs) the fast path sends about
        // (11 + 4) x 11 = 165 segments x 1.2; a 100-segment window cannot hold that.
        v.peer_rwnd_bytes = 100 * MSS;
        let mut out = Vec::new();
        Blest::default().schedule(&v, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn uses_the_slow_path_when_the_window_is_large_enough() {
        let s = paths();
        let mut v = conn(&s, 1_000_000);
        v.peer_rwnd_bytes = 1000 * MSS;
        let mut out = Vec::new();
        Blest::default().schedule(&v, &mut out);
        assert_eq!(
            out,
            vec![Action::SendNew {
                subflow: 1,
                max_bytes: MSS
            }]
        );
    }

    #[test]
    fn lambda_grows_after_blocking_and_shrinks_otherwise() {
        let s = paths();
        let mut b = Blest::default();
        let mut v = conn(&s, 1_000_000);
        v.peer_rwnd_bytes = 1000 * MSS;
        b.schedule(&v, &mut Vec::new());
        assert_eq!(b.lambda_milli(), 1190);
        // Window blocked (HoL) at the next slow-path RTT: the flag is set, then used.
        v.now_ns += 100 * MS;
        v.next_dsn = 1000 * MSS;
        b.schedule(&v, &mut Vec::new());
        v.now_ns += 100 * MS;
        v.next_dsn = 0;
        b.schedule(&v, &mut Vec::new());
        assert_eq!(b.lambda_milli(), 1230);
    }
}
