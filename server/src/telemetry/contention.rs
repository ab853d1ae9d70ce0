//! What else ran on a run's GPUs, and whether their clocks were held down:
//! from the sampler's process listings (`--query-compute-apps`, every
//! [`super::APPS_EVERY_S`] s) and the clock event reasons of its readings.
//! Counted per run while it goes ([`RunSeen`]), kept with the run's GPUs
//! (`runs.telemetry_gpus`), and made measurements when its numbers are
//! extracted ([`measurements`]), which the `gpu_contended` guard reads.
//!
//! Whose a process is comes from its environment: every process of a run
//! (and of a server a run started) carries the run's `SLEUTH_RUN_DIR`; a
//! server's carry its `SLEUTH_SERVER_TOKEN` too. With each listing come the
//! CPU ticks of the runs' processes that are not a server's — the load
//! generator among them: `client_saturated` reads whether it used a whole
//! core through its run.

use domain::metrics::Measurement;
use domain::telemetry::{ClockReasons, Sample};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Processes kept per listing and per GPU of a run: a host with thousands is
/// said by its first ones.
pub const PROCESSES_KEPT: usize = 64;
/// A process name longer than this is cut.
const NAME_CHARS: usize = 200;
/// A clock below this share of the GPU's highest, with a reason holding it,
/// is held (the power cap trims a few percent at full load by design).
const HELD_BELOW: f64 = 0.95;
/// GPU memory in use (MiB) above which a GPU is at work: a listing that shows
/// no process on it cannot see its processes.
const AT_WORK_MIB: f64 = 1024.0;

/// A reading's clock facts: the GPU's highest SM clock and why it is held.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    pub max_mhz: Option<f64>,
    pub reasons: Option<ClockReasons>,
}

/// Whose a process on a GPU is, as the sampler could tell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "dir", rename_all = "snake_case")]
pub enum Owner {
    /// A Sleuth run's: the name of its directory (`12-0a1b2c3d`).
    Run(String),
    /// Not a Sleuth run's: its environment names no run directory.
    Other,
    /// Another user's: its environment cannot be read.
    Unreadable,
    /// Not in the host's `/proc` as Sleuth sees it (nvidia-smi answers for
    /// another PID namespace), or gone before it was looked at.
    Elsewhere,
}

/// A client process's share of a core at or above this is busy: a
/// generator in one Python thread cannot go faster.
const BUSY_SHARE: f64 = 0.9;
/// Processes of runs whose CPU is followed at once, per run.
const CPU_KEPT: usize = 64;

/// One listing: the processes on the GPUs, the CPU ticks of the runs'
/// processes, and the host's ticks per second.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listing {
    pub apps: Vec<App>,
    pub cpu: Vec<CpuTicks>,
    pub hz: f64,
}

/// A run's process (not a server's) and the CPU time it has used.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuTicks {
    /// Its run's directory name.
    pub dir: String,
    pub pid: u32,
    /// User and system time, in clock ticks.
    pub ticks: u64,
}

impl CpuTicks {
    /// `dir,pid,ticks` as the sampler script prints it.
    pub fn parse(line: &str) -> Option<CpuTicks> {
        let mut fields = line.trim().splitn(3, ',');
        let dir = fields.next()?.to_string();
        let (pid, ticks) = (fields.next()?.parse().ok()?, fields.next()?.parse().ok()?);
        (!dir.is_empty()).then_some(CpuTicks { dir, pid, ticks })
    }
}

/// A run's process's CPU over the run: between two listings, its share of a
/// core; how many such intervals, how many of them busy, the most.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessCpu {
    pub dir: String,
    pub pid: u32,
    pub intervals: u32,
    pub busy: u32,
    pub max_pct: f64,
}

/// A process in one listing.
#[derive(Clone, Debug, PartialEq)]
pub struct App {
    pub gpu: u32,
    pub pid: u32,
    pub mib: Option<f64>,
    pub owner: Owner,
    pub name: String,
}

impl App {
    /// `GPU-uuid,pid,MiB,owner,name` as the sampler script prints it; `None`
    /// for a line of another shape or a GPU it did not name.
    pub fn parse(line: &str, uuids: &HashMap<String, u32>) -> Option<App> {
        let mut fields = line.splitn(5, ',');
        let gpu = *uuids.get(fields.next()?.trim())?;
        let pid = fields.next()?.trim().parse().ok()?;
        let mib = fields.next()?.trim().parse::<f64>().ok().filter(|m| m.is_finite());
        let owner = match fields.next()?.trim() {
            "" => Owner::Other,
            "?" => Owner::Unreadable,
            "-" => Owner::Elsewhere,
            dir => Owner::Run(dir.to_string()),
        };
        let name = fields.next()?.trim().chars().take(NAME_CHARS).collect();
        Some(App { gpu, pid, mib, owner, name })
    }
}

/// A process seen on a GPU during a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessSeen {
    pub pid: u32,
    pub name: String,
    pub owner: Owner,
    /// The most GPU memory it held in a listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mib: Option<f64>,
    /// In how many of the run's listings.
    pub listings: u32,
}

/// One GPU during a run: its clocks and the processes on it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GpuSeen {
    /// Readings that said why the clocks are where they are, and of those,
    /// the ones held below the GPU's highest by power, heat or a setting.
    pub clocks_read: u32,
    pub clocks_held: u32,
    /// The reasons of the held readings, together.
    pub reasons: u64,
    pub processes: Vec<ProcessSeen>,
}

/// A run's GPU as stored with it: index and name (what the telemetry API
/// answers), and what the listings saw of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuEntry {
    pub index: u32,
    pub name: String,
    #[serde(flatten)]
    pub seen: GpuSeen,
}

/// What the sampler saw of a run, as stored with it (`runs.telemetry_gpus`):
/// how many process listings were taken while it went, its GPUs, and the CPU
/// of its processes. Runs stored before listings hold the list of GPUs
/// alone, and read as such (no listing taken).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredShape")]
pub struct Stored {
    pub listings: u32,
    pub gpus: Vec<GpuEntry>,
    pub cpu: Vec<ProcessCpu>,
}

/// [`Stored`] as it may be found: whole, or the list of GPUs alone.
#[derive(Deserialize)]
#[serde(untagged)]
enum StoredShape {
    Whole {
        #[serde(default)]
        listings: u32,
        gpus: Vec<GpuEntry>,
        #[serde(default)]
        cpu: Vec<ProcessCpu>,
    },
    Gpus(Vec<GpuEntry>),
}

impl From<StoredShape> for Stored {
    fn from(shape: StoredShape) -> Self {
        match shape {
            StoredShape::Whole { listings, gpus, cpu } => Stored { listings, gpus, cpu },
            StoredShape::Gpus(gpus) => Stored { listings: 0, gpus, cpu: Vec::new() },
        }
    }
}

/// What a run's readings and listings showed, counted as they come.
#[derive(Clone, Debug, Default)]
pub struct RunSeen {
    pub listings: u32,
    pub gpus: BTreeMap<u32, GpuSeen>,
    /// Per run process: when and at what ticks it was last read, and so far.
    cpu: BTreeMap<(String, u32), (std::time::Instant, u64, ProcessCpu)>,
}

impl RunSeen {
    pub fn reading(&mut self, gpu: u32, sample: &Sample, clock: Clock) {
        let Some(reasons) = clock.reasons else { return };
        let seen = self.gpus.entry(gpu).or_default();
        seen.clocks_read += 1;
        let below = match (sample.sm_clock_mhz, clock.max_mhz) {
            (Some(now), Some(max)) if max > 0.0 => now < max * HELD_BELOW,
            _ => true,
        };
        if reasons.holding() && below {
            seen.clocks_held += 1;
            seen.reasons |= reasons.0;
        }
    }

    pub fn listing(&mut self, at: std::time::Instant, listing: &Listing) {
        self.listings += 1;
        for read in &listing.cpu {
            let key = (read.dir.clone(), read.pid);
            let room = self.cpu.len() < CPU_KEPT;
            match self.cpu.get_mut(&key) {
                Some((last_at, last_ticks, seen)) => {
                    let dt = at.saturating_duration_since(*last_at).as_secs_f64();
                    if dt >= 0.5 && listing.hz > 0.0 {
                        let share = read.ticks.saturating_sub(*last_ticks) as f64 / listing.hz / dt;
                        seen.intervals += 1;
                        seen.busy += u32::from(share >= BUSY_SHARE);
                        seen.max_pct = seen.max_pct.max((share * 100.0).min(100.0 * 64.0));
                        (*last_at, *last_ticks) = (at, read.ticks);
                    }
                }
                None if room => {
                    let seen = ProcessCpu { dir: read.dir.clone(), pid: read.pid, intervals: 0, busy: 0, max_pct: 0.0 };
                    self.cpu.insert(key, (at, read.ticks, seen));
                }
                None => {}
            }
        }
        for app in &listing.apps {
            let processes = &mut self.gpus.entry(app.gpu).or_default().processes;
            if let Some(p) = processes.iter_mut().find(|p| p.pid == app.pid && p.name == app.name) {
                p.listings += 1;
                p.mib = match (p.mib, app.mib) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            } else if processes.len() < PROCESSES_KEPT {
                processes.push(ProcessSeen {
                    pid: app.pid,
                    name: app.name.clone(),
                    owner: app.owner.clone(),
                    mib: app.mib,
                    listings: 1,
                });
            }
        }
    }

    /// What is stored of the run: the GPUs `names` lists, with what was seen
    /// on each, and its processes' CPU.
    pub fn stored(&self, names: &BTreeMap<u32, String>) -> Stored {
        let cpu = self.cpu.values().filter(|(_, _, c)| c.intervals > 0).map(|(_, _, c)| c.clone()).collect();
        let gpus = names
            .iter()
            .map(|(index, name)| GpuEntry {
                index: *index,
                name: name.clone(),
                seen: self.gpus.get(index).cloned().unwrap_or_default(),
            })
            .collect();
        Stored { listings: self.listings, gpus, cpu }
    }
}

fn measurement(metric: &str, unit: &str, value: f64, key: Option<String>) -> Measurement {
    Measurement {
        metric: metric.into(),
        value: (value * 100.0).round() / 100.0,
        unit: unit.into(),
        extractor: super::summary::EXTRACTOR.into(),
        stddev: None,
        key,
    }
}

/// The measurements the `gpu_contended` guard reads, for a run whose own
/// processes carry one of `own` (its directory, and that of the run that
/// started its server):
///
/// - `gpu_process_listings`: how many listings were taken while it went;
/// - `gpu_other_processes`: processes on its GPUs that are not its own, and
///   per process `gpu_other_process_mib` keyed `gpu 3 · pid 4242 · name`
///   (absent where the listings could not see the GPUs' processes);
/// - `sm_clock_held_pct`: the share of readings whose clocks were held below
///   the GPU's highest, per GPU and (unkeyed) the most of any; and
///   `sm_clock_held_reasons`, NVML's bits of why.
///
/// Its GPUs are those its processes were seen on; all of them where none was.
/// And from its own processes' CPU (not its server's): `client_cpu_busy_pct`,
/// the share of the listings' intervals in which its busiest process used
/// 90 % of a core or more, and `client_cpu_max_pct`, the most it used.
pub fn measurements(stored: &Stored, own: &[String], samples: &[(u32, Sample)]) -> Vec<Measurement> {
    let mut out = gpu_measurements(&stored.gpus, stored.listings, own, samples);
    let mine: Vec<&ProcessCpu> = stored.cpu.iter().filter(|c| own.contains(&c.dir) && c.intervals > 0).collect();
    if !mine.is_empty() {
        let busy = mine.iter().map(|c| f64::from(c.busy) * 100.0 / f64::from(c.intervals)).fold(0.0, f64::max);
        out.push(measurement("client_cpu_busy_pct", "%", busy, None));
        let most = mine.iter().map(|c| c.max_pct).fold(0.0, f64::max);
        out.push(measurement("client_cpu_max_pct", "%", most, None));
    }
    out
}

fn gpu_measurements(
    entries: &[GpuEntry],
    listings: u32,
    own: &[String],
    samples: &[(u32, Sample)],
) -> Vec<Measurement> {
    let ours = |o: &Owner| matches!(o, Owner::Run(dir) if own.contains(dir));
    let mut used: Vec<&GpuEntry> = entries.iter().filter(|e| e.seen.processes.iter().any(|p| ours(&p.owner))).collect();
    if used.is_empty() {
        used = entries.iter().collect();
    }
    let mut out = Vec::new();
    // Listings of a host whose GPUs no reading named say nothing of GPUs.
    if listings > 0 && !entries.is_empty() {
        out.push(measurement("gpu_process_listings", "listings", f64::from(listings), None));
        let at_work =
            |gpu: u32| samples.iter().any(|(g, s)| *g == gpu && s.mem_used_mib.is_some_and(|m| m > AT_WORK_MIB));
        // Listings that show nothing of GPUs at work, or only processes of
        // another PID namespace, cannot tell whose anything is.
        let visible = used.iter().any(|e| e.seen.processes.iter().any(|p| p.owner != Owner::Elsewhere))
            || !used.iter().any(|e| at_work(e.index));
        if visible {
            let others: Vec<(u32, &ProcessSeen)> = used
                .iter()
                .flat_map(|e| e.seen.processes.iter().map(|p| (e.index, p)))
                .filter(|(_, p)| !ours(&p.owner) && p.owner != Owner::Elsewhere)
                .collect();
            out.push(measurement("gpu_other_processes", "processes", others.len() as f64, None));
            for (gpu, p) in others {
                let key = format!("gpu {gpu} · pid {} · {}", p.pid, p.name);
                out.push(measurement("gpu_other_process_mib", "MiB", p.mib.unwrap_or(0.0), Some(key)));
            }
        }
    }
    let read: Vec<&&GpuEntry> = used.iter().filter(|e| e.seen.clocks_read > 0).collect();
    if !read.is_empty() {
        let pct = |e: &GpuEntry| f64::from(e.seen.clocks_held) * 100.0 / f64::from(e.seen.clocks_read);
        let most = read.iter().map(|e| pct(e)).fold(0.0, f64::max);
        let reasons = read.iter().fold(0, |bits, e| bits | e.seen.reasons);
        out.push(measurement("sm_clock_held_pct", "%", most, None));
        out.push(measurement("sm_clock_held_reasons", "bits", reasons as f64, None));
        for e in read {
            out.push(measurement("sm_clock_held_pct", "%", pct(e), Some(format!("gpu {}", e.index))));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uuids() -> HashMap<String, u32> {
        [("GPU-aa".to_string(), 0), ("GPU-bb".to_string(), 1)].into()
    }

    fn sample(clock: f64, used: f64) -> Sample {
        Sample { sm_clock_mhz: Some(clock), mem_used_mib: Some(used), ..Sample::default() }
    }

    #[test]
    fn a_listing_line_says_gpu_pid_memory_owner_and_a_name_with_commas() {
        let app = App::parse("GPU-bb, 4242, 1234, 7-0a1b2c3d, python3 -c a,b", &uuids()).unwrap();
        assert_eq!((app.gpu, app.pid, app.mib), (1, 4242, Some(1234.0)));
        assert_eq!((app.owner, app.name.as_str()), (Owner::Run("7-0a1b2c3d".into()), "python3 -c a,b"));
        let other = App::parse("GPU-aa,9,[N/A],,<img src=x>", &uuids()).unwrap();
        assert_eq!((other.owner, other.mib, other.name.as_str()), (Owner::Other, None, "<img src=x>"));
        assert_eq!(App::parse("GPU-aa,9,1,?,x", &uuids()).unwrap().owner, Owner::Unreadable);
        assert!(App::parse("GPU-zz,9,1,,x", &uuids()).is_none(), "a GPU the sampler did not name");
        assert!(App::parse("No running processes found", &uuids()).is_none());
    }

    #[test]
    fn another_process_on_the_runs_gpu_is_counted_its_own_and_idle_gpus_are_not() {
        let own = vec!["7-0a1b2c3d".to_string()];
        let mut seen = RunSeen::default();
        let app = |gpu, pid, owner: Owner, name: &str| App { gpu, pid, mib: Some(2048.0), owner, name: name.into() };
        for _ in 0..3 {
            let apps = vec![
                app(0, 10, Owner::Run(own[0].clone()), "vllm"),
                app(0, 11, Owner::Other, "<b>miner</b>"),
                // On a GPU the run does not use: not its contention.
                app(1, 12, Owner::Other, "jupyter"),
            ];
            seen.listing(std::time::Instant::now(), &Listing { apps, ..Listing::default() });
        }
        let names = [(0, "H200".to_string()), (1, "H200".to_string())].into();
        let stored = seen.stored(&names);
        let found = measurements(&stored, &own, &[(0, sample(1980.0, 70_000.0))]);
        let get = |m: &str| found.iter().find(|x| x.metric == m && x.key.is_none()).map(|x| x.value);
        assert_eq!(get("gpu_process_listings"), Some(3.0));
        assert_eq!(get("gpu_other_processes"), Some(1.0));
        let keyed: Vec<_> = found.iter().filter(|m| m.metric == "gpu_other_process_mib").collect();
        assert_eq!(keyed.len(), 1);
        assert_eq!(keyed[0].key.as_deref(), Some("gpu 0 · pid 11 · <b>miner</b>"));
        // Stored and read back as the run's GPUs, names first.
        let json = serde_json::to_string(&stored).unwrap();
        let back: Stored = serde_json::from_str(&json).unwrap();
        assert_eq!(back, stored);
        // Stored before listings: the list of GPUs alone.
        let plain: Stored = serde_json::from_str(r#"[{"index":0,"name":"H200"}]"#).unwrap();
        assert!(measurements(&plain, &own, &[]).is_empty(), "a run stored before listings: nothing said");
        assert_eq!(plain.gpus[0].name, "H200");
    }

    #[test]
    fn listings_that_cannot_see_a_busy_gpus_processes_say_nothing_of_them() {
        let mut seen = RunSeen::default();
        seen.listing(std::time::Instant::now(), &Listing::default());
        let stored = seen.stored(&[(0, "H100".to_string())].into());
        let busy = measurements(&stored, &[], &[(0, sample(1980.0, 60_000.0))]);
        assert!(busy.iter().any(|m| m.metric == "gpu_process_listings"));
        assert!(!busy.iter().any(|m| m.metric == "gpu_other_processes"), "{busy:?}");
        let idle = measurements(&stored, &[], &[(0, sample(345.0, 0.0))]);
        assert!(idle.iter().any(|m| m.metric == "gpu_other_processes" && m.value == 0.0), "{idle:?}");
    }

    #[test]
    fn clocks_held_by_heat_count_idle_and_a_clock_at_its_highest_do_not() {
        let mut seen = RunSeen::default();
        let held = Clock { max_mhz: Some(1980.0), reasons: Some(ClockReasons(0x40)) };
        let idle = Clock { max_mhz: Some(1980.0), reasons: Some(ClockReasons(0x1)) };
        let cap_at_max = Clock { max_mhz: Some(1980.0), reasons: Some(ClockReasons(0x4)) };
        seen.reading(0, &sample(1410.0, 1.0), held);
        seen.reading(0, &sample(345.0, 1.0), idle);
        seen.reading(0, &sample(1965.0, 1.0), cap_at_max);
        seen.reading(0, &sample(1980.0, 1.0), Clock { max_mhz: Some(1980.0), reasons: None });
        let g = &seen.gpus[&0];
        assert_eq!((g.clocks_read, g.clocks_held, g.reasons), (3, 1, 0x40));
        let found = measurements(&seen.stored(&[(0, "H100".to_string())].into()), &[], &[]);
        let get = |m: &str| found.iter().find(|x| x.metric == m && x.key.is_none()).map(|x| x.value);
        assert_eq!(get("sm_clock_held_pct"), Some(33.33));
        assert_eq!(get("sm_clock_held_reasons"), Some(64.0));
        assert_eq!(get("gpu_process_listings"), None, "no listing was taken");
    }

    /// The real H200's query loop (no clock event reasons asked) and its host
    /// facts as Sleuth stored them (before P2P was read): the guards say what
    /// they cannot see, never `ok`.
    #[test]
    fn the_real_h200s_readings_and_facts_leave_contention_and_topology_unknown() {
        let mut seen = RunSeen::default();
        let readings =
            crate::telemetry::parse::readings(&crate::fixtures::read("gpu-host-h200/nvidia-smi-query-loop.csv"));
        for r in &readings {
            let sample = Sample { sm_clock_mhz: r.sm_clock_mhz, mem_used_mib: r.mem_used_mib, ..Sample::default() };
            seen.reading(r.gpu, &sample, Clock { max_mhz: r.sm_clock_max_mhz, reasons: r.clock_reasons });
        }
        assert!(!readings.is_empty() && seen.gpus.is_empty(), "no reasons in these readings: nothing counted");
        let found = measurements(&seen.stored(&[(0, "NVIDIA H200".to_string())].into()), &[], &[]);
        assert!(found.is_empty(), "{found:?}");
        let run = domain::guards::RunFacts { id: 1, measurements: &found, ..Default::default() };
        let guards = domain::guards::of_run(&run, std::slice::from_ref(&run), &domain::guards::Bounds::default());
        let contended = guards.iter().find(|g| g.name == domain::guards::GuardName::GpuContended).unwrap();
        assert_eq!(contended.level, domain::guards::Level::Unknown, "{contended:?}");
        let facts: domain::hosts::HostFacts =
            serde_json::from_str(&crate::fixtures::read("gpu-host-h200/sleuth-host-facts.json")).unwrap();
        assert!(facts.p2p.is_none(), "stored before P2P was read");
        let links = facts.links();
        let tp = domain::guards::RunFacts { id: 2, collective: true, host: Some(&links), ..Default::default() };
        let guards = domain::guards::of_run(&tp, std::slice::from_ref(&tp), &domain::guards::Bounds::default());
        let topology = guards.iter().find(|g| g.name == domain::guards::GuardName::Topology).unwrap();
        // One GPU: no peers to reach, whatever P2P says.
        assert_eq!(topology.level, domain::guards::Level::Ok, "{topology:?}");
        assert!(topology.text.contains("One GPU on the host"), "{}", topology.text);
    }

    #[test]
    fn a_run_process_at_a_whole_core_is_busy_its_servers_and_other_runs_are_not_counted() {
        let mut seen = RunSeen::default();
        let t0 = std::time::Instant::now();
        let tick = |dir: &str, pid, ticks| CpuTicks { dir: dir.into(), pid, ticks };
        for (i, at) in [0u64, 2, 4, 6].iter().enumerate() {
            let i = i as u64;
            let cpu = vec![
                // The client: 200 ticks (2 s at 100 Hz) every 2 s.
                tick("7-0a1b2c3d", 70, 1000 + 200 * i),
                // A shell of the same run, idle.
                tick("7-0a1b2c3d", 71, 5),
                // Another run's busy process: not this run's client.
                tick("8-99", 80, 400 * i),
            ];
            seen.listing(t0 + std::time::Duration::from_secs(*at), &Listing { cpu, hz: 100.0, ..Listing::default() });
        }
        let stored = seen.stored(&BTreeMap::new());
        let back: Stored = serde_json::from_str(&serde_json::to_string(&stored).unwrap()).unwrap();
        assert_eq!(back, stored);
        let found = measurements(&back, &["7-0a1b2c3d".to_string()], &[]);
        let get = |m: &str| found.iter().find(|x| x.metric == m).map(|x| x.value);
        assert_eq!((get("client_cpu_busy_pct"), get("client_cpu_max_pct")), (Some(100.0), Some(100.0)));
        assert!(measurements(&back, &["9-00".to_string()], &[]).is_empty(), "no process of that run");
        assert_eq!(CpuTicks::parse("7-0a1b2c3d,70,1234"), Some(tick("7-0a1b2c3d", 70, 1234)));
        assert_eq!(CpuTicks::parse(",70,1"), None);
    }
}
