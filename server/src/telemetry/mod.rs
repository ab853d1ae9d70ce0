//! GPU telemetry while a run goes: on a second channel of the run's pooled
//! connection, `nvidia-smi` samples every GPU every 500 ms (`--query-gpu … -lms`,
//! on the channel's stdout) and PCIe throughput every second (`dmon -s t`, on
//! its stderr: two processes writing one pipe can interleave their lines, and a
//! mangled header once cost a whole run its samples); the readings are stored with
//! the run as they come, summarised into measurements when it ends
//! ([`summary`]), and drawn beside its output (`crate::charts::telemetry`).
//!
//! The sampler never fails a run: no `nvidia-smi`, a channel that does not
//! open, a driver that answers with an error — each is a note on the run. It
//! stops with the run: Sleuth closes the channel's stdin, the script's `read`
//! returns and its exit trap kills both samplers (`kill 0`: its process group),
//! and a connection that drops does the same through sshd. Nothing is left
//! running on the host.

pub mod parse;
pub mod summary;

use crate::db::Store;
use crate::ssh::exec::{self, Event};
use crate::ssh::{Pool, Target, quote};
use domain::telemetry::Sample;
use parse::{DmonColumns, QueryColumns, Reading};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How often the GPUs are read.
pub const SAMPLE_MS: u32 = 500;
/// Samples are stored at least this often while a run goes.
const STORE_EVERY: Duration = Duration::from_secs(2);
/// A sampler channel that does not open within this is given up (a note).
const OPEN_WITHIN: Duration = Duration::from_secs(10);
/// After the run: how long the sampler may take to stop before its channel is closed.
const STOP_WITHIN: Duration = Duration::from_secs(3);
/// A PCIe reading older than this is not attached to a sample.
const PCIE_FRESH_MS: u64 = 1500;
/// The first line the script prints when the host has no nvidia-smi.
const NO_NVIDIA_SMI: &str = "sleuth-telemetry: no nvidia-smi";

/// The fields read every sample; `name` last, as it may hold commas.
const QUERY: &str =
    "index,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm,clocks.mem,temperature.gpu,name";

/// The script the sampler channel runs (POSIX sh).
pub fn sampler_script() -> String {
    format!(
        "command -v nvidia-smi >/dev/null 2>&1 || {{ echo '{NO_NVIDIA_SMI}'; exit 0; }}\n\
         trap 'kill 0 2>/dev/null' EXIT HUP INT TERM\n\
         nvidia-smi --query-gpu={QUERY} --format=csv,noheader,nounits -lms {SAMPLE_MS} &\n\
         {{ nvidia-smi dmon -s t -d 1 2>/dev/null; }} >&2 &\n\
         read _ignored || true\n"
    )
}

/// A sampler running beside a run.
pub struct Sampler {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// What the sampler learnt besides samples, stored on the run at the end.
#[derive(Default)]
struct Collected {
    names: BTreeMap<u32, String>,
    notes: Vec<String>,
    stderr: String,
}

impl Sampler {
    /// Starts sampling `target`'s GPUs for `run`, in the run's environment (its
    /// PATH finds the same nvidia-smi as the command); `started` is the run's t = 0.
    pub fn start(
        pool: Arc<Pool>,
        store: Store,
        target: Target,
        env: Vec<(String, String)>,
        run: i64,
        started: Instant,
    ) -> Self {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut collected = Collected::default();
            sample(&pool, &store, &target, &env, run, started, stopped, &mut collected).await;
            if !collected.stderr.trim().is_empty() {
                let said: String = collected.stderr.trim().chars().take(300).collect();
                collected.notes.push(format!("nvidia-smi said: {said}"));
            }
            let gpus: Vec<serde_json::Value> = collected
                .names
                .iter()
                .map(|(index, name)| serde_json::json!({ "index": index, "name": name }))
                .collect();
            let (gpus, notes) = (serde_json::json!(gpus).to_string(), serde_json::json!(collected.notes).to_string());
            if let Err(e) = store.set_telemetry_info(run, &gpus, &notes).await {
                tracing::error!(run, "cannot record telemetry notes: {e}");
            }
        });
        Self { stop, task }
    }

    /// Tells it to stop, without waiting: a run's end never waits on its
    /// sampler (whose channel may still be starting its shell). The returned
    /// task ends once what was sampled is stored.
    pub fn stop(self) -> tokio::task::JoinHandle<()> {
        let _ = self.stop.send(());
        self.task
    }
}

#[allow(clippy::too_many_arguments)]
async fn sample(
    pool: &Pool,
    store: &Store,
    target: &Target,
    env: &[(String, String)],
    run: i64,
    started: Instant,
    mut stopped: oneshot::Receiver<()>,
    collected: &mut Collected,
) {
    let opened = tokio::select! {
        opened = tokio::time::timeout(OPEN_WITHIN, exec::open(pool, target)) => opened,
        _ = &mut stopped => return,
    };
    let opened = match opened {
        Ok(Ok(opened)) => opened,
        Ok(Err(e)) => return collected.notes.push(format!("GPU telemetry could not start: {e}")),
        Err(_) => {
            return collected.notes.push(format!(
                "GPU telemetry could not start: no second channel to {} within {} s (the host's session limit?).",
                target.name,
                OPEN_WITHIN.as_secs()
            ));
        }
    };
    let env = env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let script = quote::remote_script(&sampler_script(), env, std::iter::empty(), None);
    let mut channel = match opened.start(&script).await {
        Ok(exec) => exec,
        Err(e) => return collected.notes.push(format!("GPU telemetry could not start: {e}")),
    };
    let mut lines = Lines::new();
    let mut errors = Lines::new();
    let mut pending: Vec<(u32, Sample)> = Vec::new();
    let mut last_store = Instant::now();
    let mut stop_by: Option<tokio::time::Instant> = None;
    // Lines that were neither a header nor a reading: if nothing was sampled, they say why.
    let (mut sampled, mut unread) = (0usize, Vec::<String>::new());
    loop {
        let deadline = crate::time::or_never(stop_by.map(tokio::time::sleep_until));
        tokio::select! {
            event = channel.next() => match event {
                Some(Event::Stdout(data)) => {
                    let t_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    for line in lines.push(&data) {
                        if line.trim() == NO_NVIDIA_SMI {
                            collected.notes.push(format!("No nvidia-smi on {}: no GPU telemetry.", target.name));
                        } else if let Some(sample) = lines.read(&line, t_ms, collected) {
                            pending.push(sample);
                            sampled += 1;
                        } else if unread.len() < 3 && !line.trim().is_empty() {
                            unread.push(line);
                        }
                    }
                }
                Some(Event::Stderr(data)) => {
                    let t_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    for line in errors.push(&data) {
                        if !lines.read_dmon(&line, t_ms) && collected.stderr.len() < 4096 {
                            collected.stderr.push_str(&line);
                            collected.stderr.push('\n');
                        }
                    }
                }
                Some(Event::Exit(_)) => {}
                None => break,
            },
            _ = &mut stopped, if stop_by.is_none() => {
                // EOF on stdin: the script's `read` returns, its trap kills the samplers.
                channel.eof().await;
                stop_by = Some(tokio::time::Instant::now() + STOP_WITHIN);
            }
            () = deadline => {
                channel.signal(russh::Sig::TERM).await;
                channel.close().await;
                collected.notes.push("The GPU sampler did not stop when asked; its channel was closed.".into());
                break;
            }
        }
        if last_store.elapsed() >= STORE_EVERY && !pending.is_empty() {
            store_samples(store, run, &mut pending).await;
            last_store = Instant::now();
        }
    }
    store_samples(store, run, &mut pending).await;
    if sampled == 0 && !unread.is_empty() {
        let said: String = unread.join(" | ").chars().take(300).collect();
        collected.notes.push(format!("nvidia-smi answered, but not with readings Sleuth understands: {said}"));
    } else if sampled == 0 && collected.notes.is_empty() {
        collected.notes.push(format!(
            "No GPU reading came in the {:.1} s the sampler ran (nvidia-smi's first can take a while).",
            started.elapsed().as_secs_f64()
        ));
    }
}

async fn store_samples(store: &Store, run: i64, pending: &mut Vec<(u32, Sample)>) {
    if pending.is_empty() {
        return;
    }
    if let Err(e) = store.insert_samples(run, pending).await {
        tracing::error!(run, "cannot store GPU telemetry: {e}");
    }
    pending.clear();
}

/// The sampler's output, cut into lines, and what each line is.
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    query: Option<QueryColumns>,
    dmon: Option<DmonColumns>,
    /// Each GPU's newest PCIe reading (rx, tx, when), for the next sample.
    pcie: BTreeMap<u32, (Option<f64>, Option<f64>, u64)>,
}

impl Lines {
    /// The query's columns are known ([`QUERY`], asked without a header); a
    /// header line, where one comes, names them instead.
    fn new() -> Self {
        Self { query: QueryColumns::from_header(QUERY), ..Self::default() }
    }

    fn push(&mut self, data: &[u8]) -> Vec<String> {
        self.partial.extend_from_slice(data);
        let mut lines = Vec::new();
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            lines.push(String::from_utf8_lossy(&line).trim_end().to_string());
        }
        // A line that never ends is not telemetry; do not hold it forever.
        if self.partial.len() > 64 * 1024 {
            self.partial.clear();
        }
        lines
    }

    /// A sample for a query line (with the GPU's newest PCIe reading); `None`
    /// for headers and dmon lines (which are kept for the next sample).
    fn read(&mut self, line: &str, t_ms: u64, collected: &mut Collected) -> Option<(u32, Sample)> {
        if let Some(columns) = DmonColumns::from_header(line) {
            self.dmon = Some(columns);
            return None;
        }
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            return None;
        }
        if let Some(columns) = QueryColumns::from_header(line) {
            self.query = Some(columns);
            return None;
        }
        if line.contains(',') {
            let reading = self.query.as_ref()?.reading(line)?;
            if let Some(name) = &reading.name {
                collected.names.entry(reading.gpu).or_insert_with(|| name.clone());
            }
            let (rx, tx) = match self.pcie.get(&reading.gpu) {
                Some((rx, tx, at)) if t_ms.saturating_sub(*at) <= PCIE_FRESH_MS => (*rx, *tx),
                _ => (None, None),
            };
            return Some((reading.gpu, sample_of(&reading, t_ms, rx, tx)));
        }
        self.read_dmon(line, t_ms);
        None
    }

    /// Whether `line` was dmon's (a header or a reading, kept for the next sample).
    fn read_dmon(&mut self, line: &str, t_ms: u64) -> bool {
        if let Some(columns) = DmonColumns::from_header(line) {
            self.dmon = Some(columns);
            return true;
        }
        if line.trim_start().starts_with('#') {
            return true;
        }
        let Some(reading) = self.dmon.as_ref().and_then(|d| d.reading(line)) else { return false };
        self.pcie.insert(reading.gpu, (reading.pcie_rx_mbs, reading.pcie_tx_mbs, t_ms));
        true
    }
}

fn sample_of(r: &Reading, t_ms: u64, pcie_rx_mbs: Option<f64>, pcie_tx_mbs: Option<f64>) -> Sample {
    Sample {
        t_ms,
        gpu_util: r.gpu_util,
        mem_util: r.mem_util,
        mem_used_mib: r.mem_used_mib,
        power_w: r.power_w,
        sm_clock_mhz: r.sm_clock_mhz,
        mem_clock_mhz: r.mem_clock_mhz,
        temp_c: r.temp_c,
        pcie_rx_mbs,
        pcie_tx_mbs,
    }
}

/// The run's telemetry as the API answers it.
pub async fn of_run(
    store: &Store,
    run: i64,
    sampled: bool,
) -> Result<domain::telemetry::Telemetry, crate::db::StoreError> {
    let (gpus, notes) = store.telemetry_info(run).await?.unwrap_or_default();
    let names: Vec<(u32, String)> = gpus
        .and_then(|g| serde_json::from_str::<Vec<serde_json::Value>>(&g).ok())
        .unwrap_or_default()
        .iter()
        .filter_map(|g| Some((u32::try_from(g["index"].as_u64()?).ok()?, g["name"].as_str()?.to_string())))
        .collect();
    let mut notes: Vec<String> = notes.and_then(|n| serde_json::from_str(&n).ok()).unwrap_or_default();
    if !sampled {
        notes.push("GPU telemetry was off for this run's step.".into());
    }
    let mut series: BTreeMap<u32, domain::telemetry::GpuSeries> = BTreeMap::new();
    for (gpu, sample) in store.samples(run).await? {
        series
            .entry(gpu)
            .or_insert_with(|| domain::telemetry::GpuSeries {
                index: gpu,
                name: names.iter().find(|(i, _)| *i == gpu).map(|(_, n)| n.clone()).unwrap_or_default(),
                samples: Vec::new(),
            })
            .samples
            .push(sample);
    }
    Ok(domain::telemetry::Telemetry { gpus: series.into_values().collect(), notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_of_both_formats_becomes_samples_with_fresh_pcie() {
        let mut lines = Lines::new();
        let mut collected = Collected::default();
        let text = "index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], power.draw [W], \
                    clocks.sm [MHz], clocks.mem [MHz], temperature.gpu, name\n\
                    # gpu  rxpci  txpci\n# Idx   MB/s   MB/s\n    0    162     24\n\
                    0, 71, 59, 7087, 247.87, 1980, 3201, 41, NVIDIA H200\n";
        let mut samples = Vec::new();
        // Split mid-line, as SSH packets do.
        for part in [&text[..50], &text[50..130], &text[130..]] {
            for line in lines.push(part.as_bytes()) {
                samples.extend(lines.read(&line, 1000, &mut collected));
            }
        }
        assert_eq!(samples.len(), 1);
        let (gpu, s) = &samples[0];
        assert_eq!((*gpu, s.gpu_util, s.mem_util, s.power_w), (0, Some(71.0), Some(59.0), Some(247.87)));
        assert_eq!((s.pcie_rx_mbs, s.pcie_tx_mbs), (Some(162.0), Some(24.0)));
        assert_eq!(collected.names.get(&0).map(String::as_str), Some("NVIDIA H200"));
        // Much later, the PCIe reading is stale and not attached.
        let later = lines.read("0, 1, 1, 1, 1, 1, 1, 1, NVIDIA H200", 9000, &mut collected).unwrap();
        assert_eq!(later.1.pcie_rx_mbs, None);
    }

    #[test]
    fn headerless_readings_and_dmon_on_stderr_need_no_header_on_stdout() {
        // As the script asks: query lines without a header on stdout, dmon on stderr.
        let (mut lines, mut collected) = (Lines::new(), Collected::default());
        for line in ["# gpu  rxpci  txpci", "# Idx   MB/s   MB/s", "    0    162     24"] {
            assert!(lines.read_dmon(line, 900), "{line}");
        }
        assert!(!lines.read_dmon("Failed to initialize NVML: Driver/library version mismatch", 900));
        let (gpu, s) =
            lines.read("0, 100, 63, 7087, 522.5, 1830, 3201, 45, NVIDIA H200", 1000, &mut collected).unwrap();
        assert_eq!((gpu, s.gpu_util, s.mem_util, s.sm_clock_mhz), (0, Some(100.0), Some(63.0), Some(1830.0)));
        assert_eq!(s.pcie_rx_mbs, Some(162.0));
        assert_eq!(collected.names.get(&0).map(String::as_str), Some("NVIDIA H200"));
    }

    #[test]
    fn the_script_quits_without_nvidia_smi_and_kills_its_group() {
        let script = sampler_script();
        assert!(script.contains("command -v nvidia-smi") && script.contains("kill 0"));
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&script)
            .env("PATH", "/nonexistent")
            .output()
            .expect("sh");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), NO_NVIDIA_SMI);
    }
}
