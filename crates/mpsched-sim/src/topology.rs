//! Topology generators: a k-ary FatTree (the data-center network of the `003_` seed and of
//! Raiciu et al., "Improving datacenter performance and robustness with Multipath TCP",
//! SIGCOMM 2011) and a shared-bottleneck dumbbell, each producing the links and, for a host
//! pair, the paths of the normalized configuration ([`LinkConfig`], [`PathConfig`]).
//!
//! FatTree (Al-Fares et al., SIGCOMM 2008): `k` pods, each with `k/2` edge and `k/2`
//! aggregation switches; `(k/2)^2` core switches; `k^3/4` hosts, `k/2` per edge switch. Core
//! switch `c` connects to aggregation switch `c / (k/2)` of every pod. Between hosts on one edge
//! switch there is 1 path, within a pod `k/2` (one per aggregation switch), between pods
//! `(k/2)^2` (one per core switch), all of equal length. A path is chosen per subflow either
//! by ECMP hashing (a hash of the host pair and the subflow's ports picks among the equal-cost
//! paths, so subflows may collide) or explicitly (subflows spread evenly over the paths, at
//! most one per core path while there are enough, as `003_` configures its routing tables).
//!
//! Hosts may have several interfaces (`host_interfaces`), as in `003_`'s reproduction of
//! Raiciu et al. (§3.3: "with 4 subflows, each host has 4 interfaces with an IP address each;
//! the host-edge part has as many interfaces as addresses, and the aggregation-edge part gets
//! interfaces accordingly"): every host-edge and edge-aggregation link is then `n` parallel
//! links, and subflow `s` leaves and enters its hosts on interface `s mod n` and crosses the
//! edge-aggregation tier on that link's copy; the core tier is unchanged.

use crate::config::{LinkConfig, PathConfig};
use serde::{Deserialize, Serialize};

/// How a subflow's path is chosen among the equal-cost ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PathChoice {
    /// A hash of (source, destination, flow, subflow) modulo the number of paths, as a switch
    /// hashing the 5-tuple (each subflow has its own source port).
    #[default]
    Ecmp,
    /// Subflow `i` of `m` takes path `i * n / m + o` when `m <= n` (evenly spread over the
    /// core; `o < n / m` a per-flow offset from the ECMP hash), else `i mod n`.
    Explicit,
}

/// A k-ary FatTree with a rate per tier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FatTreeConfig {
    /// Switch port count (even, at least 2); `k = 4` is 16 hosts, `k = 8` is 128.
    pub k: usize,
    /// Host-edge link rate, bit/s.
    pub host_rate_bps: u64,
    /// Edge-aggregation link rate, bit/s.
    pub edge_agg_rate_bps: u64,
    /// Aggregation-core link rate, bit/s.
    pub agg_core_rate_bps: u64,
    /// One-way propagation delay of every link, ns.
    pub link_delay_ns: u64,
    /// Drop-tail queue of every link, packets.
    pub queue_packets: u64,
    /// Interfaces per host (1: one access link). With `n`, host-edge and edge-aggregation
    /// links are `n` parallel links each and subflow `s` uses copy `s mod n`.
    #[serde(default = "one")]
    pub host_interfaces: usize,
}

fn one() -> usize {
    1
}

impl FatTreeConfig {
    /// Every tier at `host_rate_bps / oversubscription` above the hosts: `oversubscription`
    /// is the ratio of the bandwidth hosts can offer to what the tier above carries (4 for the
    /// 4:1 tree of Raiciu et al. §4; 1 for full bisection bandwidth).
    pub fn oversubscribed(
        k: usize,
        host_rate_bps: u64,
        oversubscription: f64,
        link_delay_ns: u64,
        queue_packets: u64,
    ) -> Self {
        let upper = ((host_rate_bps as f64 / oversubscription.max(1e-9)).round() as u64).max(1);
        Self {
            k,
            host_rate_bps,
            edge_agg_rate_bps: upper,
            agg_core_rate_bps: upper,
            link_delay_ns,
            queue_packets,
            host_interfaces: 1,
        }
    }

    /// Checks `k`; returns a message naming what is wrong.
    pub fn check(&self) -> Result<(), String> {
        if self.k < 2 || self.k & 1 == 1 || self.k > 64 {
            return Err(format!("k must be even, from 2 to 64; got {}", self.k));
        }
        if self.host_rate_bps == 0 || self.edge_agg_rate_bps == 0 || self.agg_core_rate_bps == 0 {
            return Err("link rates must be positive".into());
        }
        if self.queue_packets == 0 {
            return Err("queue_packets must be positive".into());
        }
        if self.host_interfaces == 0 || self.host_interfaces > crate::MAX_SUBFLOWS {
            return Err(format!(
                "host_interfaces must be from 1 to {}; got {}",
                crate::MAX_SUBFLOWS,
                self.host_interfaces
            ));
        }
        Ok(())
    }
}

/// A built FatTree: its links and the arithmetic that routes between hosts.
#[derive(Debug, Clone)]
pub struct FatTree {
    cfg: FatTreeConfig,
    half: usize,
    links: Vec<LinkConfig>,
}

impl FatTree {
    /// Builds the tree's links (the config passed [`FatTreeConfig::check`]).
    pub fn new(cfg: FatTreeConfig) -> Self {
        let half = cfg.k / 2;
        let mut t = Self { cfg, half, links: Vec::new() };
        let link = |name: String, rate_bps: u64, c: &FatTreeConfig| LinkConfig {
            name,
            queue_packets: Some(c.queue_packets),
            ..LinkConfig::plain(rate_bps, c.link_delay_ns)
        };
        let c = t.cfg.clone();
        let n = c.host_interfaces;
        // Parallel copies of a link are named "h0->e0#1"; with one interface the names stay
        // "h0->e0".
        let copy = |i: usize| if n > 1 { format!("#{i}") } else { String::new() };
        for h in 0..t.hosts() {
            for i in 0..n {
                t.links.push(link(format!("h{h}->e{}{}", h / half, copy(i)), c.host_rate_bps, &c));
                t.links.push(link(format!("e{}->h{h}{}", h / half, copy(i)), c.host_rate_bps, &c));
            }
        }
        for e in 0..t.switches_per_tier() {
            for a in 0..half {
                let ag = (e / half) * half + a;
                for i in 0..n {
                    t.links.push(link(format!("e{e}->a{ag}{}", copy(i)), c.edge_agg_rate_bps, &c));
                    t.links.push(link(format!("a{ag}->e{e}{}", copy(i)), c.edge_agg_rate_bps, &c));
                }
            }
        }
        for ag in 0..t.switches_per_tier() {
            for j in 0..half {
                let core = (ag % half) * half + j;
                t.links.push(link(format!("a{ag}->c{core}"), c.agg_core_rate_bps, &c));
                t.links.push(link(format!("c{core}->a{ag}"), c.agg_core_rate_bps, &c));
            }
        }
        t
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &FatTreeConfig {
        &self.cfg
    }

    /// Number of hosts, `k^3 / 4`.
    pub fn hosts(&self) -> usize {
        self.cfg.k * self.half * self.half
    }

    /// Number of core switches, `(k/2)^2`.
    pub fn core_switches(&self) -> usize {
        self.half * self.half
    }

    /// Edge (or aggregation) switches in the whole tree, `k * k/2`.
    fn switches_per_tier(&self) -> usize {
        self.cfg.k * self.half
    }

    /// Pod of a host.
    pub fn pod(&self, host: usize) -> usize {
        host / (self.half * self.half)
    }

    /// Every unidirectional link (index = link index of the configuration).
    pub fn links(&self) -> &[LinkConfig] {
        &self.links
    }

    /// Interfaces per host.
    pub fn interfaces(&self) -> usize {
        self.cfg.host_interfaces
    }

    // Link indices, in the order `new` pushes them; `i` is the interface (link copy).
    fn host_up(&self, h: usize, i: usize) -> usize {
        2 * (h * self.interfaces() + i)
    }
    fn host_down(&self, h: usize, i: usize) -> usize {
        self.host_up(h, i) + 1
    }
    fn edge_agg(&self, edge: usize, a: usize, i: usize, up: bool) -> usize {
        let n = self.interfaces();
        2 * self.hosts() * n + 2 * ((edge * self.half + a) * n + i) + usize::from(!up)
    }
    fn agg_core(&self, agg: usize, j: usize, up: bool) -> usize {
        let n = self.interfaces();
        2 * self.hosts() * n
            + 2 * self.switches_per_tier() * self.half * n
            + 2 * (agg * self.half + j)
            + usize::from(!up)
    }

    /// Number of equal-cost shortest paths from `src` to `dst` (distinct hosts).
    pub fn equal_cost_paths(&self, src: usize, dst: usize) -> usize {
        if src / self.half == dst / self.half {
            1
        } else if self.pod(src) == self.pod(dst) {
            self.half
        } else {
            self.core_switches()
        }
    }

    /// Link chain from host `src` to host `dst` along equal-cost path `choice` (taken modulo
    /// the number of paths) on interface `iface` (taken modulo the interfaces). Within a pod
    /// the choice names the aggregation switch; between pods the core switch (`choice / (k/2)`
    /// is then the aggregation switch on both sides).
    pub fn route(&self, src: usize, dst: usize, choice: usize, iface: usize) -> Vec<usize> {
        let (es, ed) = (src / self.half, dst / self.half);
        let n = self.equal_cost_paths(src, dst);
        let c = choice % n;
        let i = iface % self.interfaces();
        if es == ed {
            return vec![self.host_up(src, i), self.host_down(dst, i)];
        }
        if self.pod(src) == self.pod(dst) {
            return vec![
                self.host_up(src, i),
                self.edge_agg(es, c, i, true),
                self.edge_agg(ed, c, i, false),
                self.host_down(dst, i),
            ];
        }
        let (a, j) = (c / self.half, c % self.half);
        let (ags, agd) = (self.pod(src) * self.half + a, self.pod(dst) * self.half + a);
        vec![
            self.host_up(src, i),
            self.edge_agg(es, a, i, true),
            self.agg_core(ags, j, true),
            self.agg_core(agd, j, false),
            self.edge_agg(ed, a, i, false),
            self.host_down(dst, i),
        ]
    }

    /// The path a flow whose data goes from `sender` to `receiver` uses with `choice`: data
    /// on `down` (the configuration's server-to-client direction), ACKs back along the same
    /// switches on `up`.
    /// `iface` is the interface the path uses at both hosts.
    pub fn path(&self, sender: usize, receiver: usize, choice: usize, iface: usize) -> PathConfig {
        let c = choice % self.equal_cost_paths(sender, receiver);
        let i = iface % self.interfaces();
        let name = if self.interfaces() > 1 {
            format!("h{sender}-h{receiver}.{c}.if{i}")
        } else {
            format!("h{sender}-h{receiver}.{c}")
        };
        PathConfig {
            name,
            down: self.route(sender, receiver, c, i),
            up: self.route(receiver, sender, c, i),
            gso: false,
        }
    }

    /// Path choices of the `subflows` subflows of flow `flow_id` from `sender` to `receiver`.
    pub fn choices(
        &self,
        sender: usize,
        receiver: usize,
        flow_id: u64,
        subflows: usize,
        how: PathChoice,
    ) -> Vec<usize> {
        let n = self.equal_cost_paths(sender, receiver);
        (0..subflows)
            .map(|s| match how {
                // Evenly spaced, so the aggregation switches share the subflows too (8 of k =
                // 8's 16 core paths: every other one, not the 8 under two switches), from an
                // offset of the flow's own, or every flow would leave the same cores idle.
                PathChoice::Explicit if subflows <= n => {
                    let stride = n / subflows;
                    let offset =
                        (ecmp_hash(sender as u64, receiver as u64, flow_id, u64::MAX) % stride as u64) as usize;
                    (s * n / subflows + offset) % n
                }
                PathChoice::Explicit => s % n,
                PathChoice::Ecmp => (ecmp_hash(sender as u64, receiver as u64, flow_id, s as u64) % n as u64) as usize,
            })
            .collect()
    }
}

/// A deterministic hash standing in for a switch's 5-tuple hash (SplitMix64's finaliser,
/// Steele et al., OOPSLA 2014, over the combined fields).
pub fn ecmp_hash(src: u64, dst: u64, flow_id: u64, subflow: u64) -> u64 {
    let mut z = src
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(dst.rotate_left(16))
        .wrapping_add(flow_id.rotate_left(32))
        .wrapping_add(subflow.rotate_left(48))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A dumbbell: `pairs` sender-receiver host pairs, each host with `interfaces` access links,
/// all crossing one bottleneck each way. Pair `i`'s interface `m` is one path, so a
/// multipath connection over several interfaces of one pair shares the bottleneck with
/// itself and with the other pairs (the setting of RFC 6356's fairness goal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DumbbellConfig {
    /// Host pairs.
    pub pairs: usize,
    /// Access links (interfaces) per host.
    pub interfaces: usize,
    /// Access link rate, bit/s.
    pub access_rate_bps: u64,
    /// Access link one-way delay, ns.
    pub access_delay_ns: u64,
    /// Bottleneck rate, bit/s.
    pub bottleneck_rate_bps: u64,
    /// Bottleneck one-way delay, ns.
    pub bottleneck_delay_ns: u64,
    /// Bottleneck queue, packets (access links: 1000 packets).
    pub queue_packets: u64,
}

/// Links of a dumbbell, and the path of every (pair, interface): `paths[pair * interfaces +
/// interface]`. Links 0 and 1 are the bottleneck (data direction, then reverse).
pub fn dumbbell(c: &DumbbellConfig) -> (Vec<LinkConfig>, Vec<PathConfig>) {
    let link = |name: String, rate_bps: u64, delay_ns: u64, queue: u64| LinkConfig {
        name,
        queue_packets: Some(queue),
        ..LinkConfig::plain(rate_bps, delay_ns)
    };
    let mut links = vec![
        link("bottleneck.fwd".into(), c.bottleneck_rate_bps, c.bottleneck_delay_ns, c.queue_packets),
        link("bottleneck.rev".into(), c.bottleneck_rate_bps, c.bottleneck_delay_ns, c.queue_packets),
    ];
    let mut paths = Vec::new();
    for i in 0..c.pairs {
        for m in 0..c.interfaces {
            let base = links.len();
            for side in ["s", "r"] {
                for dir in ["out", "in"] {
                    links.push(link(format!("{side}{i}.{m}.{dir}"), c.access_rate_bps, c.access_delay_ns, 1000));
                }
            }
            // sender out, bottleneck, receiver in; receiver out, reverse, sender in
            paths.push(PathConfig {
                name: format!("pair{i}.if{m}"),
                down: vec![base, 0, base + 3],
                up: vec![base + 2, 1, base + 1],
                gso: false,
            });
        }
    }
    (links, paths)
}

/// The paths of a configuration built over a [`FatTree`], each (sender, receiver, choice)
/// listed once however many flows use it (a permutation of k = 8 uses a few thousand of the
/// tree's hundreds of thousands of host-pair paths).
#[derive(Debug, Default)]
pub struct PathTable {
    /// Paths in index order (the configuration's `paths`).
    pub paths: Vec<PathConfig>,
    index: std::collections::BTreeMap<(usize, usize, usize, usize), usize>,
}

impl PathTable {
    /// Index of the path from `sender` to `receiver` along `choice` on interface `iface`,
    /// added if new.
    pub fn index(&mut self, tree: &FatTree, sender: usize, receiver: usize, choice: usize, iface: usize) -> usize {
        let c = choice % tree.equal_cost_paths(sender, receiver);
        let i = iface % tree.interfaces();
        *self.index.entry((sender, receiver, c, i)).or_insert_with(|| {
            self.paths.push(tree.path(sender, receiver, c, i));
            self.paths.len() - 1
        })
    }

    /// Path indices of a flow's subflows; subflow `s` uses interface `s mod n`. Subflows
    /// hashed onto the same path keep it both (as under real ECMP, two subflows then share one
    /// core path).
    pub fn flow_paths(&mut self, tree: &FatTree, sender: usize, receiver: usize, choices: &[usize]) -> Vec<usize> {
        choices.iter().enumerate().map(|(s, &c)| self.index(tree, sender, receiver, c, s)).collect()
    }
}

/// The permutation traffic matrix of Raiciu et al. (SIGCOMM 2011, §4): every host sends to
/// exactly one other host and receives from exactly one (a random derangement; `dst[h]` is
/// the receiver of host `h`), drawn from `seed` by Fisher-Yates shuffles until no host is
/// its own receiver.
pub fn permutation(hosts: usize, seed: u64) -> Vec<usize> {
    let mut rng = mpsched_engine::rng::Rng::stream(seed, RNG_PERMUTATION);
    let mut dst: Vec<usize> = (0..hosts).collect();
    if hosts < 2 {
        return dst;
    }
    loop {
        for i in (1..hosts).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            dst.swap(i, j);
        }
        // About 1/e of shuffles are derangements: a handful of tries.
        if dst.iter().enumerate().all(|(h, &d)| h != d) {
            return dst;
        }
    }
}

/// Component id of the permutation's random stream (apart from the run's link streams).
const RNG_PERMUTATION: u64 = 3 << 32;

/// A topology to build, as the Python front end asks for it (`mpsched._core.topology_json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologyRequest {
    /// A FatTree and the paths of the given flows.
    Fattree {
        /// The tree.
        tree: FatTreeConfig,
        /// Flows whose subflow paths are wanted.
        flows: Vec<FlowRoute>,
    },
    /// A dumbbell (every pair's paths).
    Dumbbell {
        /// The dumbbell.
        dumbbell: DumbbellConfig,
    },
}

/// A flow to route over a FatTree.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowRoute {
    /// Host the data leaves from.
    pub sender: usize,
    /// Host the data goes to.
    pub receiver: usize,
    /// Flow id (part of the ECMP hash).
    pub flow_id: u64,
    /// Number of subflows (1 for plain TCP).
    pub subflows: usize,
    /// How each subflow's path is chosen.
    #[serde(default)]
    pub choice: PathChoice,
}

/// Links and paths of a built topology.
#[derive(Debug, Clone, Serialize)]
pub struct TopologyBuild {
    /// Hosts (FatTree) or host pairs (dumbbell).
    pub hosts: usize,
    /// Every link.
    pub links: Vec<LinkConfig>,
    /// Paths (FatTree: those the flows use; dumbbell: pair-major, interface-minor).
    pub paths: Vec<PathConfig>,
    /// FatTree: path indices of each requested flow's subflows, in request order.
    pub flow_paths: Vec<Vec<usize>>,
}

/// Builds a requested topology; returns a message naming what is wrong.
pub fn build(req: &TopologyRequest) -> Result<TopologyBuild, String> {
    match req {
        TopologyRequest::Fattree { tree, flows } => {
            tree.check()?;
            let t = FatTree::new(tree.clone());
            let mut table = PathTable::default();
            let mut flow_paths = Vec::with_capacity(flows.len());
            for (i, f) in flows.iter().enumerate() {
                if f.sender >= t.hosts() || f.receiver >= t.hosts() || f.sender == f.receiver {
                    return Err(format!("flows[{i}]: sender and receiver must be distinct hosts below {}", t.hosts()));
                }
                if f.subflows == 0 || f.subflows > crate::MAX_SUBFLOWS {
                    return Err(format!("flows[{i}].subflows: between 1 and {}", crate::MAX_SUBFLOWS));
                }
                let choices = t.choices(f.sender, f.receiver, f.flow_id, f.subflows, f.choice);
                flow_paths.push(table.flow_paths(&t, f.sender, f.receiver, &choices));
            }
            Ok(TopologyBuild { hosts: t.hosts(), links: t.links().to_vec(), paths: table.paths, flow_paths })
        }
        TopologyRequest::Dumbbell { dumbbell: d } => {
            if d.pairs == 0 || d.interfaces == 0 || d.interfaces > crate::MAX_SUBFLOWS {
                return Err(format!("pairs must be positive and interfaces from 1 to {}", crate::MAX_SUBFLOWS));
            }
            if d.access_rate_bps == 0 || d.bottleneck_rate_bps == 0 || d.queue_packets == 0 {
                return Err("rates and the queue must be positive".into());
            }
            let (links, paths) = dumbbell(d);
            Ok(TopologyBuild { hosts: d.pairs, links, paths, flow_paths: Vec::new() })
        }
    }
}
