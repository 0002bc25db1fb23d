//! Checks a [`SimConfig`] for everything the core relies on, so the core never panics on a
//! configuration that passed. The Python front end validates the human scenario first; this is
//! the last line of defence (and the only one for configs built by hand or by benchmarks).

use crate::config::{AppConfig, ConfigError, Direction, JitterConfig, Protocol, SimConfig};

fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { field: field.into(), message: message.into() }
}

/// Largest number of subflows a connection may open (path masks are 64-bit).
pub const MAX_SUBFLOWS: usize = 32;

/// Largest host-delay percentile: far above any host's processing time, and small enough that
/// the log-normal's draws stay far from overflowing time arithmetic.
const MAX_HOST_DELAY_NS: u64 = 1_000_000_000;

/// Largest number of application units (blocks, objects, transfers) of one flow: unit tags
/// travel as 32-bit numbers, and ten million 8 KB blocks are 80 GB, beyond any study here.
pub const MAX_UNITS: usize = 10_000_000;

/// A non-empty list of positive unit sizes whose total fits 64 bits.
fn check_units(sizes: &[u64], field: impl Fn(&str) -> String) -> Result<(), ConfigError> {
    if sizes.is_empty() || sizes.len() > MAX_UNITS {
        return Err(err(field(""), format!("between 1 and {MAX_UNITS} entries")));
    }
    if let Some(i) = sizes.iter().position(|&s| s == 0) {
        return Err(err(field(&format!("[{i}]")), "must be positive"));
    }
    if sizes.iter().try_fold(0u64, |a, &b| a.checked_add(b)).is_none() {
        return Err(err(field(""), "the total does not fit 64 bits"));
    }
    Ok(())
}

impl SimConfig {
    /// Every token bucket holds the largest packet sent through it (tbf drops a packet longer
    /// than its bucket, so such a flow would stall): a full segment of every transport whose
    /// flows use the link, and the cross traffic's packets.
    fn check_buckets(&self) -> Result<(), ConfigError> {
        if self.links.iter().all(|l| l.burst_bytes.is_none()) {
            return Ok(());
        }
        let fits = |l: usize, packet: u64, what: &str| {
            let link = &self.links[l];
            match link.burst_bytes {
                Some(burst) if burst < packet + link.overhead_bytes => Err(err(
                    format!("links[{l}].burst_bytes"),
                    format!(
                        "the bucket ({burst} bytes) must hold {what} ({packet} bytes + {} framing)",
                        link.overhead_bytes
                    ),
                )),
                _ => Ok(()),
            }
        };
        for i in 0..self.flows.len() {
            let t = self.flows[i].transport;
            let segment = self.transports[t].mss_bytes + mpsched_proto::tcp::HEADER_BYTES;
            for &p in self.flow_paths(i) {
                for &l in self.paths[p].down.iter().chain(&self.paths[p].up) {
                    fits(l, segment, &format!("a full segment of transports[{t}]"))?;
                }
            }
        }
        for c in &self.cross_traffic {
            for &l in &c.links {
                fits(l, c.packet_bytes, "a cross-traffic packet")?;
            }
        }
        Ok(())
    }

    /// Paths of flow `flow` (its own, or its transport's).
    pub fn flow_paths(&self, flow: usize) -> &[usize] {
        let f = &self.flows[flow];
        f.paths.as_deref().unwrap_or(&self.transports[f.transport].paths)
    }

    /// Returns the first problem found, naming the field and what is allowed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.duration_ns == 0 {
            return Err(err("duration_ns", "must be positive"));
        }
        if self.links.len() > u32::MAX as usize / 2 {
            return Err(err("links", "too many links"));
        }
        for (i, l) in self.links.iter().enumerate() {
            let f = |name: &str| format!("links[{i}].{name}");
            l.capacity.validate(l.rate_bps).map_err(|(name, m)| err(f(&format!("capacity.{name}")), m))?;
            l.loss.validate().map_err(|(name, m)| err(f(&format!("loss.{name}")), m))?;
            l.validate().map_err(|(name, m)| err(f(name), m))?;
            if let JitterConfig::Smooth { period_ns: 0, .. } = l.jitter {
                return Err(err(f("jitter.period_ns"), "must be positive"));
            }
            if l.queue_bytes == Some(0) || l.queue_packets == Some(0) {
                return Err(err(f("queue"), "a queue limit must be positive (omit it for unlimited)"));
            }
        }
        let n_links = self.links.len();
        for (i, p) in self.paths.iter().enumerate() {
            for (dir, chain) in [("down", &p.down), ("up", &p.up)] {
                if chain.is_empty() {
                    return Err(err(format!("paths[{i}].{dir}"), "a path needs at least one link each way"));
                }
                if chain.len() > u16::MAX as usize {
                    return Err(err(format!("paths[{i}].{dir}"), "too many hops"));
                }
                if let Some(bad) = chain.iter().find(|&&l| l >= n_links) {
                    return Err(err(
                        format!("paths[{i}].{dir}"),
                        format!("link index {bad} does not exist (there are {n_links} links)"),
                    ));
                }
            }
        }
        let n_paths = self.paths.len();
        for (i, t) in self.transports.iter().enumerate() {
            let f = |name: &str| format!("transports[{i}].{name}");
            if t.paths.is_empty() {
                return Err(err(f("paths"), "a transport needs at least one path"));
            }
            if t.paths.len() > MAX_SUBFLOWS {
                return Err(err(f("paths"), format!("at most {MAX_SUBFLOWS} subflows")));
            }
            if let Some(bad) = t.paths.iter().chain(&t.backup_paths).find(|&&p| p >= n_paths) {
                return Err(err(f("paths"), format!("path index {bad} does not exist (there are {n_paths} paths)")));
            }
            if let Some(bad) = t.backup_paths.iter().find(|p| !t.paths.contains(p)) {
                return Err(err(f("backup_paths"), format!("path {bad} is not among the transport's paths")));
            }
            if t.protocol == Protocol::Tcp && t.paths.len() != 1 {
                return Err(err(f("paths"), "plain TCP uses exactly one path"));
            }
            if t.mss_bytes < 64 || t.mss_bytes > 65_000 {
                return Err(err(f("mss_bytes"), "must be between 64 and 65000"));
            }
            if t.init_cwnd_segments == 0 {
                return Err(err(f("init_cwnd_segments"), "must be at least 1"));
            }
            if t.rcv_buf_bytes < 2 * t.mss_bytes || t.snd_buf_bytes < 2 * t.mss_bytes {
                return Err(err(f("rcv_buf_bytes"), "buffers must hold at least two segments"));
            }
            // RFC 7323's largest window: no receiver offers more, so every flight stays far
            // below the 4 GiB the senders' sequence offsets hold.
            if t.rcv_buf_bytes > 65_535 << 14 {
                return Err(err(
                    f("rcv_buf_bytes"),
                    "at most 1073725440 bytes (65535 << 14, TCP's largest window, RFC 7323)",
                ));
            }
        }
        let mut ids = std::collections::BTreeSet::new();
        for (i, fl) in self.flows.iter().enumerate() {
            let f = |name: &str| format!("flows[{i}].{name}");
            if fl.transport >= self.transports.len() {
                return Err(err(f("transport"), format!("transport index {} does not exist", fl.transport)));
            }
            if let Some(paths) = &fl.paths {
                let t = &self.transports[fl.transport];
                if paths.is_empty() || paths.len() > MAX_SUBFLOWS {
                    return Err(err(f("paths"), format!("between 1 and {MAX_SUBFLOWS} paths")));
                }
                if let Some(bad) = paths.iter().find(|&&p| p >= n_paths) {
                    return Err(err(
                        f("paths"),
                        format!("path index {bad} does not exist (there are {n_paths} paths)"),
                    ));
                }
                if t.protocol == Protocol::Tcp && paths.len() != 1 {
                    return Err(err(f("paths"), "plain TCP uses exactly one path"));
                }
            }
            if !ids.insert(fl.id) {
                return Err(err(f("id"), format!("flow id {} is used twice", fl.id)));
            }
            match &fl.app {
                AppConfig::Sized { size_bytes: 0 } => return Err(err(f("app.size_bytes"), "must be positive")),
                &AppConfig::Bulk { stop_ns } if stop_ns <= fl.start_ns => {
                    return Err(err(f("app.stop_ns"), "must be after the flow's start"))
                }
                AppConfig::Web { objects_bytes, request_bytes, request_retry_ns } => {
                    check_units(objects_bytes, |n| f(&format!("app.objects_bytes{n}")))?;
                    if fl.direction != Direction::Download {
                        return Err(err(
                            f("direction"),
                            "a web page is a download (requests go up, objects come down)",
                        ));
                    }
                    if !(1..=65_535).contains(request_bytes) {
                        return Err(err(f("app.request_bytes"), "must be between 1 and 65535"));
                    }
                    if *request_retry_ns == 0 {
                        return Err(err(f("app.request_retry_ns"), "must be positive"));
                    }
                }
                &AppConfig::Rpc { requests, request_bytes, response_bytes, interval_ns, concurrency, .. } => {
                    if fl.direction != Direction::Download {
                        return Err(err(f("direction"), "an RPC is a download (requests go up, responses come down)"));
                    }
                    if requests == 0 || requests > MAX_UNITS as u64 {
                        return Err(err(f("app.requests"), format!("must be from 1 to {MAX_UNITS}")));
                    }
                    // Requests travel in the connection's byte stream: any size, segmented.
                    if request_bytes == 0 || requests.checked_mul(request_bytes).is_none() {
                        return Err(err(f("app.request_bytes"), "must be positive (and all requests fit in u64)"));
                    }
                    if response_bytes == 0 || requests.checked_mul(response_bytes).is_none() {
                        return Err(err(f("app.response_bytes"), "must be positive (and all responses fit in u64)"));
                    }
                    if interval_ns == Some(0) {
                        return Err(err(f("app.interval_ns"), "must be positive"));
                    }
                    if concurrency == Some(0) || (interval_ns.is_some() && concurrency.is_some()) {
                        return Err(err(
                            f("app.concurrency"),
                            "a closed loop takes a positive concurrency; an open loop (interval_ns) none",
                        ));
                    }
                }
                &AppConfig::Cbr { rate_bps, block_bytes, stop_ns } => {
                    if rate_bps == 0 || block_bytes == 0 {
                        return Err(err(f("app"), "rate_bps and block_bytes must be positive"));
                    }
                    if stop_ns <= fl.start_ns {
                        return Err(err(f("app.stop_ns"), "must be after the flow's start"));
                    }
                    let n = crate::units::cbr_blocks(fl.start_ns, stop_ns, block_bytes, rate_bps);
                    if n > MAX_UNITS as u64 || n.checked_mul(block_bytes).is_none() {
                        return Err(err(f("app"), format!("{n} blocks; at most {MAX_UNITS} per flow")));
                    }
                }
                &AppConfig::Messages { size_bytes, interval_ns, stop_ns, .. } => {
                    if size_bytes == 0 || interval_ns == 0 {
                        return Err(err(f("app"), "size_bytes and interval_ns must be positive"));
                    }
                    if stop_ns <= fl.start_ns {
                        return Err(err(f("app.stop_ns"), "must be after the flow's start"));
                    }
                    let n = crate::units::interval_units(fl.start_ns, stop_ns, interval_ns);
                    if n > MAX_UNITS as u64 || n.checked_mul(size_bytes).is_none() {
                        return Err(err(f("app"), format!("{n} messages; at most {MAX_UNITS} per flow")));
                    }
                }
                AppConfig::Transfers { sizes_bytes, offsets_ns } => {
                    check_units(sizes_bytes, |n| f(&format!("app.sizes_bytes{n}")))?;
                    if let Some(o) = offsets_ns {
                        if o.len() != sizes_bytes.len() {
                            return Err(err(f("app.offsets_ns"), "one offset per transfer"));
                        }
                        if o.windows(2).any(|w| w[1] < w[0]) {
                            return Err(err(f("app.offsets_ns"), "offsets must not decrease"));
                        }
                    }
                }
                _ => {}
            }
        }
        if self.flows.len() > crate::run::MAX_FLOWS {
            let most = crate::run::MAX_FLOWS;
            return Err(err("flows", format!("at most {most} flows a run; split the study into several runs")));
        }
        for (i, c) in self.cross_traffic.iter().enumerate() {
            let f = |name: &str| format!("cross_traffic[{i}].{name}");
            if c.links.is_empty() || c.links.iter().any(|&l| l >= n_links) {
                return Err(err(f("links"), "must list existing link indices"));
            }
            if c.rate_bps == 0 {
                return Err(err(f("rate_bps"), "must be positive"));
            }
            if c.packet_bytes == 0 || c.packet_bytes > 65_535 {
                return Err(err(f("packet_bytes"), "must be between 1 and 65535"));
            }
        }
        self.check_buckets()?;
        if let Some(h) = &self.host_delay {
            if h.median_ns == 0 {
                return Err(err("host_delay.median_ns", "must be positive (omit host_delay for no host delay)"));
            }
            if h.p99_ns < h.median_ns {
                return Err(err("host_delay.p99_ns", "must be at least the median"));
            }
            if h.p99_ns > MAX_HOST_DELAY_NS {
                return Err(err("host_delay.p99_ns", "at most 1 s (a host delay is a processing time)"));
            }
            if h.floor_ns >= h.median_ns {
                return Err(err("host_delay.floor_ns", "must be below the median (0 for no floor)"));
            }
            if let Some(st) = &h.stall {
                if st.per_million == 0 || st.per_million >= 1_000_000 {
                    return Err(err("host_delay.stall.per_million", "between 1 and 999999 (omit stall for none)"));
                }
                if st.run_packets == 0 {
                    return Err(err("host_delay.stall.run_packets", "at least 1 (a spell has a packet)"));
                }
                // The chain's entry probability, p / (1 - p) / run, must be a probability.
                let p = st.per_million as f64 / 1e6;
                if p / (1.0 - p) / st.run_packets as f64 > 1.0 {
                    return Err(err(
                        "host_delay.stall.per_million",
                        "too high for spells this short (p / (1 - p) / run_packets must be at most 1)",
                    ));
                }
                if st.median_ns == 0 {
                    return Err(err("host_delay.stall.median_ns", "must be positive"));
                }
                if st.p99_ns < st.median_ns {
                    return Err(err("host_delay.stall.p99_ns", "must be at least the stall's median"));
                }
                if st.p99_ns > MAX_HOST_DELAY_NS {
                    return Err(err("host_delay.stall.p99_ns", "at most 1 s (a host delay is a processing time)"));
                }
            }
        }
        for (i, e) in self.path_events.iter().enumerate() {
            if e.path() >= n_paths {
                return Err(err(format!("path_events[{i}].path"), format!("path index {} does not exist", e.path())));
            }
            if let Err((field, message)) = e.check() {
                return Err(err(format!("path_events[{i}].{field}"), message));
            }
        }
        Ok(())
    }
}
