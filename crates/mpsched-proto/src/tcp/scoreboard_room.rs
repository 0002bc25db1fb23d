//! The board's room handed from a finished connection's subflow to the next one's: a short
//! flow then does not allocate its segment queue and regrow it as its window opens (4-5
//! reallocations and copies a 64 KB flow).

use super::{Scoreboard, KEEP_SLOTS};
use std::collections::VecDeque;

impl Scoreboard {
    /// The segment queue's room, emptied, if it is no more than a board keeps through a flight
    /// ([`KEEP_SLOTS`]: a larger room would be given back at the first ACK, a reallocation
    /// for nothing). The board keeps none.
    pub(in crate::tcp) fn take_room(&mut self) -> Option<VecDeque<u64>> {
        let room = self.segs.take_room();
        (room.capacity() > 0 && room.capacity() <= KEEP_SLOTS).then_some(room)
    }

    /// Takes `room` (from [`Scoreboard::take_room`]) as the segment queue's, on a board that
    /// has stored nothing yet: only its capacity differs from a new board's.
    pub(in crate::tcp) fn adopt_room(&mut self, room: VecDeque<u64>) {
        self.segs.adopt_room(room);
    }
}
