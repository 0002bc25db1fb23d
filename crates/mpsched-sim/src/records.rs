//! Run records as column tables, handed to Python (which writes Parquet with pyarrow/polars),
//! so the Rust build stays free of the arrow and parquet crates.

/// One column of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// Unsigned integers.
    U64(Vec<u64>),
    /// Floats.
    F64(Vec<f64>),
    /// Booleans.
    Bool(Vec<bool>),
    /// Strings.
    Str(Vec<String>),
    /// Unsigned integers that may be missing (e.g. the end time of an unfinished flow).
    OptU64(Vec<Option<u64>>),
}

impl Column {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::OptU64(v) => v.len(),
        }
    }

    /// True when the column holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named table of equally long columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Table name, e.g. "flows".
    pub name: &'static str,
    /// Columns in a fixed order.
    pub columns: Vec<(&'static str, Column)>,
}

impl Table {
    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| *n == name).map(|(_, c)| c)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }
}

/// Everything one run records.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Records {
    /// Tables in a fixed order: flows, subflows, blocks, actions, subflow_series,
    /// conn_series, link_series, links.
    pub tables: Vec<Table>,
    /// Simulator counters: events processed, packets sent, simulated time reached.
    pub stats: RunStats,
}

impl Records {
    /// The table called `name`.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// Counters describing the run itself (for benchmarks and sanity checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunStats {
    /// Events popped from the event queue.
    pub events: u64,
    /// Packets injected into the network (segments and cross traffic).
    pub packets_sent: u64,
    /// Packet-hops: packets times links traversed.
    pub packet_hops: u64,
    /// Simulated time at which the run ended, ns.
    pub end_ns: u64,
}

/// Declares a row struct and a builder that turns a list of rows into a [`Table`], so each
/// table's schema is written once.
macro_rules! table_rows {
    ($(#[$m:meta])* $row:ident => $table:literal { $($(#[$fm:meta])* $field:ident : $ty:ty => $variant:ident),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $row { $($(#[$fm])* pub $field: $ty),* }

        impl $row {
            /// Builds the table from rows.
            pub fn into_table(rows: Vec<$row>) -> Table {
                $(let mut $field = Vec::with_capacity(rows.len());)*
                for r in rows { $($field.push(r.$field);)* }
                Table { name: $table, columns: vec![$((stringify!($field), Column::$variant($field))),*] }
            }
        }
    };
}

table_rows! {
    /// One transfer.
    FlowRow => "flows" {
        /// Flow id from the config.
        flow_id: u64 => U64,
        /// "mptcp" or "tcp".
        protocol: String => Str,
        /// Scheduler name ("" for TCP).
        scheduler: String => Str,
        /// Congestion control name.
        cc: String => Str,
        /// "download" or "upload".
        direction: String => Str,
        /// Application kind ("sized", "bulk", "web", "cbr", "messages", "transfers").
        app: String => Str,
        /// Bytes the application transfers (None for bulk).
        size_bytes: Option<u64> => OptU64,
        /// Application units carried one after another on this one connection (web objects,
        /// CBR blocks, transfers; their times are in `blocks`): 1 for a sized flow, which has a
        /// fresh connection of its own (its FCT includes the handshake), 0 for bulk.
        units: u64 => U64,
        /// connect() time, ns.
        start_ns: u64 => U64,
        /// Time the last byte reached the receiving application, ns (None if unfinished).
        end_ns: Option<u64> => OptU64,
        /// Flow completion time from connect() to the last byte, ns.
        fct_ns: Option<u64> => OptU64,
        /// True when every byte reached the receiving application.
        completed: bool => Bool,
        /// Bytes delivered in order to the receiving application.
        bytes_delivered: u64 => U64,
        /// Payload bytes transmitted on all subflows (retransmissions and copies included).
        bytes_sent: u64 => U64,
        /// Payload bytes retransmitted by subflow loss recovery.
        bytes_retransmitted: u64 => U64,
        /// Payload bytes sent again at the connection level (reinjection, redundancy).
        bytes_redundant: u64 => U64,
    }
}

table_rows! {
    /// Totals of one subflow.
    SubflowRow => "subflows" {
        /// Flow id.
        flow_id: u64 => U64,
        /// Subflow index in the connection.
        subflow: u64 => U64,
        /// Path index.
        path: u64 => U64,
        /// Payload bytes transmitted.
        bytes_sent: u64 => U64,
        /// Payload bytes cumulatively acknowledged.
        bytes_acked: u64 => U64,
        /// Payload bytes retransmitted.
        bytes_retransmitted: u64 => U64,
        /// Retransmission timeouts.
        rto_count: u64 => U64,
    }
}

table_rows! {
    /// One application unit (CBR block, real-time message, web object, transfer on a
    /// long-lived connection).
    BlockRow => "blocks" {
        /// Flow id.
        flow_id: u64 => U64,
        /// Unit index in the flow, in stream order.
        block: u64 => U64,
        /// Bytes of the unit.
        size_bytes: u64 => U64,
        /// Time the application issued it (CBR, transfer: written; web object: request first
        /// sent), ns.
        sent_ns: u64 => U64,
        /// Time its last byte reached the receiving application in order, ns (None if never).
        delivered_ns: Option<u64> => OptU64,
        /// Application delay: delivered_ns - sent_ns, ns.
        delay_ns: Option<u64> => OptU64,
        /// Largest acceptable application delay, ns (messages with a deadline; None otherwise).
        deadline_ns: Option<u64> => OptU64,
        /// The unit has a deadline and missed it: delivered later than `sent_ns + deadline_ns`,
        /// or not delivered by the end of the run although that time had passed.
        deadline_missed: bool => Bool,
    }
}

table_rows! {
    /// Actions a connection refused its scheduler, per flow, action kind and reason (non-zero
    /// counts only: a run without refusals has an empty table).
    ActionRow => "actions" {
        /// Flow id.
        flow_id: u64 => U64,
        /// Scheduler name.
        scheduler: String => Str,
        /// Kind of action: "new", "resend" or "penalize".
        action: String => Str,
        /// Why it was refused: "unknown_subflow", "subflow_not_usable", "nothing_to_send",
        /// "receive_window_full" or "subflow_queue_full".
        reason: String => Str,
        /// Actions of this kind refused for this reason.
        rejected_count: u64 => U64,
    }
}

table_rows! {
    /// A sample of one subflow's state.
    SubflowSample => "subflow_series" {
        /// Sample time, ns.
        time_ns: u64 => U64,
        /// Flow id.
        flow_id: u64 => U64,
        /// Subflow index.
        subflow: u64 => U64,
        /// Path index.
        path: u64 => U64,
        /// Congestion window, bytes.
        cwnd_bytes: u64 => U64,
        /// Smoothed RTT, ns.
        srtt_ns: u64 => U64,
        /// Bytes in flight.
        in_flight_bytes: u64 => U64,
        /// Bytes cumulatively acknowledged so far.
        bytes_acked: u64 => U64,
    }
}

table_rows! {
    /// A sample of one connection's receive side.
    ConnSample => "conn_series" {
        /// Sample time, ns.
        time_ns: u64 => U64,
        /// Flow id.
        flow_id: u64 => U64,
        /// Bytes delivered in order to the application so far.
        delivered_bytes: u64 => U64,
        /// Bytes held in the connection-level out-of-order queue.
        ofo_bytes: u64 => U64,
        /// Bytes of the receive buffer in use (out-of-order plus unread).
        rcv_buffer_bytes: u64 => U64,
        /// Receive window the buffer allows (autotuned or fixed), before the out-of-order
        /// bytes are taken off, bytes.
        rcv_wnd_bytes: u64 => U64,
    }
}

table_rows! {
    /// A sample of one link's queue.
    LinkSample => "link_series" {
        /// Sample time, ns.
        time_ns: u64 => U64,
        /// Link name.
        link: String => Str,
        /// Bytes queued.
        queue_bytes: u64 => U64,
        /// Packets queued.
        queue_packets: u64 => U64,
        /// Packets dropped by the queue so far.
        dropped_packets: u64 => U64,
    }
}

table_rows! {
    /// Totals of one link.
    LinkRow => "links" {
        /// Link name.
        link: String => Str,
        /// Bytes forwarded.
        bytes_forwarded: u64 => U64,
        /// Packets forwarded.
        packets_forwarded: u64 => U64,
        /// Packets dropped by the queue.
        packets_dropped: u64 => U64,
        /// Packets lost to the random loss model, to the link being down, or to an impairment
        /// (blackhole, loss ramp; see `path_events`).
        packets_lost: u64 => U64,
    }
}
