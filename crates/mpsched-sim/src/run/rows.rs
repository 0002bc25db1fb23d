//! The records of a finished (or unfinished) flow, and the run's tables at its end.

use super::{Flow, Simulation};
use crate::app::App;
use crate::config::Direction;
use crate::config::Protocol;
use crate::endpoint::Endpoint;
use crate::records::{
    ActionRow, BlockRow, ConnSample, FlowRow, LinkRow, LinkSample, Records, SubflowRow, SubflowSample,
};
use mpsched_engine::net::LinkId;

/// The record's name of a protocol: its variant name in lower case (no formatting per flow).
fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Mptcp => "mptcp",
        Protocol::Tcp => "tcp",
    }
}

/// The record's name of a direction: its variant name in lower case.
fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Download => "download",
        Direction::Upload => "upload",
    }
}

/// Everything one flow records.
pub(crate) struct FlowRecords {
    flow: FlowRow,
    subflows: Vec<SubflowRow>,
    blocks: Vec<BlockRow>,
    actions: Vec<ActionRow>,
}

impl Simulation<'_> {
    pub(super) fn finish_flow(&mut self, fi: usize, end_ns: Option<u64>) {
        let Some(f) = self.flows[fi].take() else { return };
        self.active_flows -= 1;
        #[cfg(test)]
        if let Some(t) = super::request::RequestTally::of(fi, &f) {
            self.request_tallies.push(t);
        }
        let row = self.flow_rows(fi, &f, end_ns);
        self.finished_rows.push(row);
        self.keep_endpoints(f);
    }

    /// Keeps a finished flow's endpoints to build later flows in: no more of a kind than flows
    /// still to start, nor than the flows that have run at once beyond those running now, so
    /// the kept and running endpoints together never outnumber those the run already had at
    /// once, and a run keeps none once no flow is left to start (100 000 flows started
    /// together keep none).
    fn keep_endpoints(&mut self, f: Flow<'_>) {
        let limit = self.pending_flows.min(self.peak_active_flows - self.active_flows);
        if limit == 0 {
            return;
        }
        let pool = &mut self.conn_configs.pool;
        let Flow { client, server, request, .. } = f;
        pool.keep(client.ep, limit);
        pool.keep(server.ep, limit);
        if let Some(r) = request {
            pool.keep(r.client.ep, limit);
            pool.keep(r.server.ep, limit);
        }
    }

    fn flow_rows(&self, fi: usize, f: &Flow, end_ns: Option<u64>) -> FlowRecords {
        let fc = &self.cfg.flows[fi];
        let (sender, receiver) = f.roles();
        let views = sender.ep.subflow_views();
        let subflows: Vec<SubflowRow> = views
            .iter()
            .map(|v| SubflowRow {
                flow_id: fc.id,
                subflow: v.id as u64,
                path: f.paths[v.id] as u64,
                bytes_sent: v.bytes_sent,
                bytes_acked: v.bytes_acked,
                bytes_retransmitted: v.bytes_retransmitted,
                rto_count: v.rto_count,
            })
            .collect();
        let row = FlowRow {
            end_ns,
            fct_ns: end_ns.map(|e| e.saturating_sub(fc.start_ns)),
            completed: App::completed(&fc.app, fc.start_ns, &receiver.ep, end_ns),
            bytes_delivered: receiver.ep.delivered_bytes(),
            bytes_sent: subflows.iter().map(|s| s.bytes_sent).sum(),
            bytes_retransmitted: subflows.iter().map(|s| s.bytes_retransmitted).sum(),
            bytes_redundant: sender.ep.redundant_bytes(),
            ..self.base_row(fi)
        };
        let now = self.now_ns.min(self.cfg.duration_ns);
        let blocks = f
            .app
            .unit_records()
            .into_iter()
            .map(|u| BlockRow {
                flow_id: fc.id,
                block: u.unit,
                size_bytes: u.size_bytes,
                sent_ns: u.sent_ns,
                delivered_ns: u.delivered_ns,
                delay_ns: u.delivered_ns.map(|d| d.saturating_sub(u.sent_ns)),
                deadline_ns: u.deadline_ns,
                deadline_missed: u.deadline_ns.is_some_and(|dl| {
                    let due = u.sent_ns.saturating_add(dl);
                    u.delivered_ns.map_or(due <= now, |d| d > due)
                }),
            })
            .collect();
        let actions = sender
            .ep
            .rejected_actions()
            .into_iter()
            .map(|(action, reason, n)| ActionRow {
                flow_id: fc.id,
                scheduler: row.scheduler.clone(),
                action: action.into(),
                reason: reason.into(),
                rejected_count: n,
            })
            .collect();
        FlowRecords { flow: row, subflows, blocks, actions }
    }

    /// The row of a flow that has moved no byte: its identity and zero counters.
    fn base_row(&self, fi: usize) -> FlowRow {
        let fc = &self.cfg.flows[fi];
        let t = &self.cfg.transports[fc.transport];
        FlowRow {
            flow_id: fc.id,
            protocol: protocol_name(t.protocol).into(),
            scheduler: if t.protocol == Protocol::Tcp { String::new() } else { t.scheduler.clone() },
            cc: t.cc.clone(),
            direction: direction_name(fc.direction).into(),
            app: App::kind(&fc.app).into(),
            size_bytes: App::size_bytes(&fc.app, fc.start_ns),
            units: App::units(&fc.app, fc.start_ns),
            start_ns: fc.start_ns,
            end_ns: None,
            fct_ns: None,
            completed: false,
            bytes_delivered: 0,
            bytes_sent: 0,
            bytes_retransmitted: 0,
            bytes_redundant: 0,
        }
    }

    /// Samples every running flow's subflows and connection, and every link's queue.
    #[inline(never)]
    pub(super) fn sample(&mut self) {
        let now = self.now_ns;
        for (fi, f) in self.flows.iter().enumerate() {
            let Some(f) = f else { continue };
            let fc = &self.cfg.flows[fi];
            let paths = f.paths;
            let (sender, receiver) = f.roles();
            for v in sender.ep.subflow_views() {
                self.subflow_samples.push(SubflowSample {
                    time_ns: now,
                    flow_id: fc.id,
                    subflow: v.id as u64,
                    path: paths[v.id] as u64,
                    cwnd_bytes: v.cwnd_bytes,
                    srtt_ns: v.srtt_ns,
                    in_flight_bytes: v.in_flight_bytes,
                    bytes_acked: v.bytes_acked,
                });
            }
            let (ofo, used, rcv_wnd) = receiver.ep.receive_buffer();
            self.conn_samples.push(ConnSample {
                time_ns: now,
                flow_id: fc.id,
                delivered_bytes: receiver.ep.delivered_bytes(),
                ofo_bytes: ofo,
                rcv_buffer_bytes: used,
                rcv_wnd_bytes: rcv_wnd,
            });
        }
        for l in 0..self.net.link_count() as LinkId {
            let (qb, qp) = self.net.queue_occupancy(l, now);
            self.link_samples.push(LinkSample {
                time_ns: now,
                link: self.net.link_name(l).to_string(),
                queue_bytes: qb,
                queue_packets: qp,
                dropped_packets: self.net.link_stats(l).packets_dropped_queue,
            });
        }
    }

    pub(super) fn into_records(mut self) -> Records {
        // Flows still running at the end are recorded as incomplete.
        for fi in 0..self.flows.len() {
            if let Some(f) = self.flows[fi].take() {
                let row = self.flow_rows(fi, &f, f.completed_ns.get());
                self.finished_rows.push(row);
            }
        }
        self.finished_rows.sort_by_key(|r| r.flow.flow_id);
        // Each table's room at once, not grown by doubling (a copy of the rows each time).
        let rows = &self.finished_rows;
        let room = |n: fn(&FlowRecords) -> usize| rows.iter().map(n).sum::<usize>();
        let mut flows = Vec::with_capacity(self.cfg.flows.len());
        let mut subflows = Vec::with_capacity(room(|r| r.subflows.len()));
        let mut blocks = Vec::with_capacity(room(|r| r.blocks.len()));
        let mut actions = Vec::with_capacity(room(|r| r.actions.len()));
        for r in std::mem::take(&mut self.finished_rows) {
            flows.push(r.flow);
            subflows.extend(r.subflows);
            blocks.extend(r.blocks);
            actions.extend(r.actions);
        }
        // Flows that never started (their start lies after the end of the run).
        for fi in (0..self.cfg.flows.len()).filter(|&fi| !self.started[fi]) {
            flows.push(self.base_row(fi));
        }
        flows.sort_by_key(|r| r.flow_id);
        let links = (0..self.net.link_count() as LinkId)
            .map(|l| {
                let s = self.net.link_stats(l);
                LinkRow {
                    link: self.net.link_name(l).to_string(),
                    bytes_forwarded: s.bytes_forwarded,
                    packets_forwarded: s.packets_forwarded,
                    packets_dropped: s.packets_dropped_queue,
                    packets_lost: s.packets_lost_random + s.packets_lost_down + s.packets_lost_impairment,
                }
            })
            .collect();
        Records {
            tables: vec![
                FlowRow::into_table(flows),
                SubflowRow::into_table(subflows),
                BlockRow::into_table(blocks),
                ActionRow::into_table(actions),
                SubflowSample::into_table(self.subflow_samples),
                ConnSample::into_table(self.conn_samples),
                LinkSample::into_table(self.link_samples),
                LinkRow::into_table(links),
            ],
            stats: self.stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_are_the_variant_names_in_lower_case() {
        for p in [Protocol::Mptcp, Protocol::Tcp] {
            assert_eq!(protocol_name(p), format!("{p:?}").to_lowercase());
        }
        for d in [Direction::Download, Direction::Upload] {
            assert_eq!(direction_name(d), format!("{d:?}").to_lowercase());
        }
    }
}
