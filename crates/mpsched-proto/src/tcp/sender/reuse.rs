//! A sender built in the heap room of a finished connection's subflow (short flows: see
//! `mptcp::DataSender::with_config_reusing`).

use super::{AnyCc, HsOption, Role, Sender, TcpConfig};

impl Sender {
    /// [`Sender::new`], its scoreboard's segment queue being `old`'s room, emptied (`old`, a
    /// finished connection's subflow, keeps none). Field for field the sender `new` builds,
    /// but for that queue's capacity.
    pub fn new_reusing(
        cfg: TcpConfig,
        role: Role,
        opt: HsOption,
        cc: AnyCc,
        old: &mut Sender,
    ) -> Self {
        let mut s = Self::new(cfg, role, opt, cc);
        if let Some(room) = old.board.take_room() {
            s.board.adopt_room(room);
        }
        s
    }
}
