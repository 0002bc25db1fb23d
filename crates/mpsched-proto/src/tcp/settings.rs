//! The parts of a [`TcpConfig`] each side of a subflow reads after construction, kept by
//! value in fewer bytes than the config (48): every concurrent flow holds a sender and a
//! receiver, each of which kept a whole copy (issue 17: fixed state per flow). Values are
//! the config's, unchanged; only what a side never reads is left out.

use super::segment::MAX_SACK_BLOCKS;
use super::{LossRecovery, TcpConfig};

/// What a [`super::Sender`] reads of its config: 24 bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SenderSettings {
    /// [`TcpConfig::rcv_buf_bytes`]: the window its segments carry.
    pub rcv_buf_bytes: u64,
    /// [`TcpConfig::init_cwnd_segments`]: the restart window after idle.
    pub init_cwnd_segments: u64,
    pub loss_recovery: LossRecovery,
    pub mptcp: bool,
    pub nagle: bool,
    pub slow_start_after_idle: bool,
}

impl SenderSettings {
    pub fn of(cfg: &TcpConfig) -> Self {
        Self {
            rcv_buf_bytes: cfg.rcv_buf_bytes,
            init_cwnd_segments: cfg.init_cwnd_segments,
            loss_recovery: cfg.loss_recovery,
            mptcp: cfg.mptcp,
            nagle: cfg.nagle,
            slow_start_after_idle: cfg.slow_start_after_idle,
        }
    }

    /// RACK-TLP is on ([`TcpConfig::rack_tlp`]).
    #[inline]
    pub fn rack_tlp(&self) -> bool {
        self.loss_recovery == LossRecovery::RackTlp
    }
}

/// What a [`super::Receiver`] reads of its config after construction: 24 bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReceiverSettings {
    /// [`TcpConfig::rcv_buf_bytes`]: a standalone receiver's buffer.
    pub rcv_buf_bytes: u64,
    pub mss_bytes: u64,
    pub quickack_segments: u32,
    /// SACK blocks an ACK carries at most: [`TcpConfig::max_sack_blocks`], at most
    /// [`MAX_SACK_BLOCKS`] (the receiver only ever compared it with the smaller of the two).
    pub sack_blocks: u8,
    pub delayed_ack: bool,
    pub mptcp: bool,
}

impl ReceiverSettings {
    pub fn of(cfg: &TcpConfig) -> Self {
        Self {
            rcv_buf_bytes: cfg.rcv_buf_bytes,
            mss_bytes: cfg.mss_bytes,
            quickack_segments: cfg.quickack_segments,
            sack_blocks: cfg.max_sack_blocks.min(MAX_SACK_BLOCKS) as u8,
            delayed_ack: cfg.delayed_ack,
            mptcp: cfg.mptcp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes the per-flow budget counts on (`tests::perf`), and the values carried over.
    #[test]
    fn settings_keep_the_config_values_in_fewer_bytes() {
        assert_eq!(std::mem::size_of::<SenderSettings>(), 24);
        assert_eq!(std::mem::size_of::<ReceiverSettings>(), 24);
        let cfg = TcpConfig {
            max_sack_blocks: 9,
            loss_recovery: LossRecovery::Rfc6675,
            nagle: true,
            ..TcpConfig::default()
        };
        let s = SenderSettings::of(&cfg);
        assert_eq!((s.rcv_buf_bytes, s.init_cwnd_segments), (6 << 20, 10));
        assert!(!s.rack_tlp() && s.nagle && !s.mptcp && s.slow_start_after_idle);
        let r = ReceiverSettings::of(&cfg);
        assert_eq!(
            (r.mss_bytes, r.quickack_segments, r.sack_blocks),
            (1448, 16, 4)
        );
        assert_eq!(r.rcv_buf_bytes, 6 << 20);
        assert!(r.delayed_ack && !r.mptcp);
        let r1 = ReceiverSettings::of(&TcpConfig {
            max_sack_blocks: 1,
            ..cfg
        });
        assert_eq!(r1.sack_blocks, 1);
    }
}
