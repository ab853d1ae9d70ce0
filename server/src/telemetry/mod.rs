//! GPU telemetry while a run goes: on a channel of the host's pooled
//! connection, shared by the runs there ([`sampler`]), `nvidia-smi` samples every GPU every 500 ms (`--query-gpu … -lms`,
//! on the channel's stdout) and PCIe throughput every second (`dmon -s t`, on
//! its stderr: two processes writing one pipe can interleave their lines, and a
//! mangled header once cost a whole run its samples); the readings are stored with
//! the run as they come, summarised into measurements when it ends
//! ([`summary`]), and drawn beside its output (`crate::charts::telemetry`).
//!
//! The sampler never fails a run: no `nvidia-smi`, a channel that does not
//! open, a driver that answers with an error — each is a note on the run. It
//! stops a while after the host's last run: Sleuth closes the channel's stdin,
//! the script's `read` returns and its exit trap kills both samplers (`kill 0`:
//! its process group), and a connection that drops does the same through sshd.
//! Nothing is left running on the host.

pub mod contention;
pub mod parse;
pub mod sampler;
pub mod summary;

use crate::db::Store;
use contention::{App, Clock, CpuTicks, Listing};
use domain::telemetry::Sample;
use parse::{DmonColumns, QueryColumns, Reading};
pub use sampler::{Samplers, Watching};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::time::Duration;

/// How often the GPUs are read.
pub const SAMPLE_MS: u32 = 500;
/// A sampler channel that does not open within this is given up (a note).
const OPEN_WITHIN: Duration = Duration::from_secs(10);
/// How long a sampler may take to stop before its channel is closed.
const STOP_WITHIN: Duration = Duration::from_secs(3);
/// A PCIe reading older than this is not attached to a sample.
const PCIE_FRESH_MS: u64 = 1500;
/// The first line the script prints when the host has no nvidia-smi.
const NO_NVIDIA_SMI: &str = "sleuth-telemetry: no nvidia-smi";

/// The fields read every sample; `name` last, as it may hold commas.
const QUERY: &str =
    "index,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm,clocks.mem,temperature.gpu,name";
/// The same with the GPU's highest SM clock and why its clocks are held
/// (newer drivers name the field `clocks_event_reasons`, older ones
/// `clocks_throttle_reasons`; one that knows neither refuses the query).
const QUERY_HELD: &str = "index,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm,clocks.mem,\
                          temperature.gpu,clocks.max.sm,REASONS,name";
/// How often the sampler lists the processes on the GPUs (`--query-compute-apps`).
pub const APPS_EVERY_S: u32 = 2;
/// Lines of the process listing: a GPU's UUID, a process, a listing's end.
const UUID_LINE: &str = "sleuth-uuid ";
const APP_LINE: &str = "sleuth-app ";
const APPS_LINE: &str = "sleuth-apps ";
/// Lines of the CPU time of Sleuth's runs' processes (not their servers'):
/// the clock's ticks per second once, then per listing `dir,pid,ticks`.
const HZ_LINE: &str = "sleuth-hz ";
const CPU_LINE: &str = "sleuth-cpu ";

/// The script the sampler channel runs (POSIX sh).
///
/// Each query prints its own header first (asked without one), so the
/// columns are known whichever the driver took. The process listing comes
/// on stdout too, a whole listing in one `printf` (one write, under
/// `PIPE_BUF`, so never cut into another line): per process its GPU, pid,
/// memory, whose it is (the base of its `SLEUTH_RUN_DIR`, empty for none,
/// `?` where its environment cannot be read, `-` where the pid is not in this
/// `/proc`) and its name, last as it may hold commas. With each listing,
/// the CPU time (user and system ticks) of every process of a Sleuth run
/// that is not a server's (no `SLEUTH_SERVER_TOKEN`): the load generator's
/// share of a core, over the run.
pub fn sampler_script() -> String {
    let held = |reasons: &str| QUERY_HELD.replace("REASONS", reasons);
    let (event, throttle) = (held("clocks_event_reasons.active"), held("clocks_throttle_reasons.active"));
    format!(
        "command -v nvidia-smi >/dev/null 2>&1 || {{ echo '{NO_NVIDIA_SMI}'; exit 0; }}\n\
         trap 'kill 0 2>/dev/null' EXIT HUP INT TERM\n\
         {{ for q in {event} {throttle}; do echo \"$q\"; nvidia-smi --query-gpu=\"$q\" --format=csv,noheader,nounits -lms {SAMPLE_MS} 2>/dev/null; done\n\
           echo '{QUERY}'; exec nvidia-smi --query-gpu={QUERY} --format=csv,noheader,nounits -lms {SAMPLE_MS}; }} &\n\
         {{ nvidia-smi dmon -s t -d 1 2>/dev/null; }} >&2 &\n\
         {{ nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>/dev/null | sed 's/^/{UUID_LINE}/'\n\
           known=' '\n\
           echo \"{HZ_LINE}$(getconf CLK_TCK 2>/dev/null || echo 100)\"\n\
           while a=$(nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory,process_name --format=csv,noheader,nounits 2>/dev/null); do\n\
             o=; k=0\n\
             while IFS=, read -r u p m n; do\n\
               p=${{p# }}; [ -n \"$p\" ] || continue\n\
               case \"$known\" in\n\
                 *\" $p=\"*) w=${{known#* $p=}}; w=${{w%% *}} ;;\n\
                 *) if [ ! -e \"/proc/$p\" ]; then w=-\n\
                    elif e=$(tr '\\0' '\\n' < \"/proc/$p/environ\" 2>/dev/null); then\n\
                      w=$(printf '%s\\n' \"$e\" | sed -n 's|^SLEUTH_RUN_DIR=.*/\\([0-9][0-9]*-[0-9a-f]*\\)$|\\1|p' | head -n 1)\n\
                    else w='?'; fi\n\
                    known=\"$known$p=$w \" ;;\n\
               esac\n\
               o=\"${{o}}{APP_LINE}$u,$p,${{m# }},$w,${{n# }}\n\"; k=$((k+1))\n\
             done <<EOF\n\
         $a\n\
         EOF\n\
             srv=' '; runs=\n\
             while IFS= read -r l; do\n\
               p=${{l#/proc/}}; p=${{p%%/*}}\n\
               case \"$l\" in *SLEUTH_SERVER_TOKEN=*) srv=\"$srv$p \" ;; *) runs=\"$runs $p=${{l##*/}}\" ;; esac\n\
             done <<EOF\n\
         $(grep -saoE 'SLEUTH_(RUN_DIR=[^[:cntrl:]]*|SERVER_TOKEN=)' /proc/[0-9]*/environ 2>/dev/null)\n\
         EOF\n\
             for r in $runs; do\n\
               p=${{r%%=*}}; d=${{r#*=}}\n\
               case \"$d\" in ''|*[!0-9a-f-]*) continue ;; esac\n\
               case \"$srv\" in *\" $p \"*) continue ;; esac\n\
               read -r s 2>/dev/null < \"/proc/$p/stat\" || continue\n\
               s=${{s##*) }}; set -- $s\n\
               o=\"${{o}}{CPU_LINE}$d,$p,$((${{12}} + ${{13}}))\n\"\n\
             done\n\
             printf '%s{APPS_LINE}%s\\n' \"$o\" \"$k\"\n\
             sleep {APPS_EVERY_S}\n\
           done; }} &\n\
         read _ignored || true\n"
    )
}

/// What one line of the sampler's stdout was.
#[derive(Debug, PartialEq)]
enum Line {
    Reading(u32, Sample, Clock),
    /// One listing of the processes on the GPUs (and of the runs' CPU time).
    Apps(Listing),
    Known,
    Unknown,
}

/// The sampler's output, cut into lines, and what each line is.
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    query: Option<QueryColumns>,
    dmon: Option<DmonColumns>,
    /// Each GPU's newest PCIe reading (rx, tx, when), for the next sample.
    pcie: BTreeMap<u32, (Option<f64>, Option<f64>, u64)>,
    /// GPUs by UUID (the process listing names them so).
    uuids: HashMap<String, u32>,
    /// The processes of the listing being read, and the runs' CPU ticks.
    apps: Vec<App>,
    cpu: Vec<CpuTicks>,
    /// The host's clock ticks per second (`getconf CLK_TCK`).
    hz: Option<f64>,
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

    /// What a line of the sampler's stdout is: a reading (with the GPU's
    /// newest PCIe reading), a line of known shape (a header, a dmon line,
    /// kept for the next sample), or one Sleuth does not understand.
    fn read(&mut self, line: &str, t_ms: u64, names: &mut BTreeMap<u32, String>) -> Line {
        if line.trim().is_empty() || self.read_dmon(line, t_ms) {
            return Line::Known;
        }
        if let Some(read) = self.read_apps(line) {
            return read;
        }
        if let Some(columns) = QueryColumns::from_header(line) {
            self.query = Some(columns);
            return Line::Known;
        }
        let Some(reading) = self.query.as_ref().and_then(|q| q.reading(line)) else { return Line::Unknown };
        if let Some(name) = &reading.name {
            names.entry(reading.gpu).or_insert_with(|| name.clone());
        }
        let (rx, tx) = match self.pcie.get(&reading.gpu) {
            Some((rx, tx, at)) if t_ms.saturating_sub(*at) <= PCIE_FRESH_MS => (*rx, *tx),
            _ => (None, None),
        };
        let clock = Clock { max_mhz: reading.sm_clock_max_mhz, reasons: reading.clock_reasons };
        Line::Reading(reading.gpu, sample_of(&reading, t_ms, rx, tx), clock)
    }

    /// A line of the process listing (`None`: not one): a GPU's UUID, a
    /// process (kept until its listing ends), or the end of a listing.
    fn read_apps(&mut self, line: &str) -> Option<Line> {
        if let Some(rest) = line.strip_prefix(UUID_LINE) {
            let (index, uuid) = rest.split_once(',')?;
            self.uuids.insert(uuid.trim().to_string(), index.trim().parse().ok()?);
            return Some(Line::Known);
        }
        if let Some(rest) = line.strip_prefix(APP_LINE) {
            let Some(app) = App::parse(rest, &self.uuids) else { return Some(Line::Unknown) };
            // A listing is bounded: a host with thousands of processes is said in the first ones.
            if self.apps.len() < contention::PROCESSES_KEPT {
                self.apps.push(app);
            }
            return Some(Line::Known);
        }
        if let Some(hz) = line.strip_prefix(HZ_LINE) {
            self.hz = hz.trim().parse::<f64>().ok().filter(|hz| *hz > 0.0);
            return Some(Line::Known);
        }
        if let Some(rest) = line.strip_prefix(CPU_LINE) {
            let Some(ticks) = CpuTicks::parse(rest) else { return Some(Line::Unknown) };
            if self.cpu.len() < contention::PROCESSES_KEPT {
                self.cpu.push(ticks);
            }
            return Some(Line::Known);
        }
        let count = line.strip_prefix(APPS_LINE)?;
        count.trim().parse::<u32>().ok()?;
        Some(Line::Apps(Listing {
            apps: std::mem::take(&mut self.apps),
            cpu: std::mem::take(&mut self.cpu),
            hz: self.hz.unwrap_or(100.0),
        }))
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
pub async fn of_run(store: &Store, run: i64, sampled: bool) -> crate::error::Result<domain::telemetry::Telemetry> {
    use crate::error::stored_opt;
    let (seen, notes) = store.telemetry_info(run).await?.unwrap_or_default();
    let seen: contention::Stored =
        stored_opt(seen.as_deref(), || format!("run {run}'s telemetry GPUs"))?.unwrap_or_default();
    let names: Vec<(u32, String)> = seen.gpus.iter().map(|g| (g.index, g.name.clone())).collect();
    let mut notes: Vec<String> =
        stored_opt(notes.as_deref(), || format!("run {run}'s telemetry notes"))?.unwrap_or_default();
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
    if series.values().any(|gpu| gpu.name.trim().is_empty()) {
        // Named by the host's facts where the readings did not name it (an
        // older nvidia-smi, a run too short for the sampler's first line).
        let facts = gpus_in_facts(store, run).await?;
        for gpu in series.values_mut().filter(|gpu| gpu.name.trim().is_empty()) {
            if let Some(fact) = facts.iter().find(|f| f.index == gpu.index) {
                gpu.name.clone_from(&fact.name);
            }
        }
    }
    Ok(domain::telemetry::Telemetry { gpus: series.into_values().collect(), notes })
}

/// The GPUs the run's host facts list (none when it has none).
async fn gpus_in_facts(store: &Store, run: i64) -> crate::error::Result<Vec<domain::hosts::GpuFact>> {
    let Some(facts) = store.run(run).await?.and_then(|row| row.facts_id) else { return Ok(Vec::new()) };
    let Some(row) = store.facts(facts).await? else { return Ok(Vec::new()) };
    Ok(crate::facts::of_row(row)?.gpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_of_both_formats_becomes_samples_with_fresh_pcie() {
        let mut lines = Lines::new();
        let mut names = BTreeMap::new();
        let text = "index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], power.draw [W], \
                    clocks.sm [MHz], clocks.mem [MHz], temperature.gpu, name\n\
                    # gpu  rxpci  txpci\n# Idx   MB/s   MB/s\n    0    162     24\n\
                    0, 71, 59, 7087, 247.87, 1980, 3201, 41, NVIDIA H200\n";
        let mut samples = Vec::new();
        // Split mid-line, as SSH packets do.
        for part in [&text[..50], &text[50..130], &text[130..]] {
            for line in lines.push(part.as_bytes()) {
                match lines.read(&line, 1000, &mut names) {
                    Line::Reading(gpu, sample, _) => samples.push((gpu, sample)),
                    Line::Known | Line::Apps(_) => {}
                    Line::Unknown => panic!("{line}"),
                }
            }
        }
        assert_eq!(samples.len(), 1);
        let (gpu, s) = &samples[0];
        assert_eq!((*gpu, s.gpu_util, s.mem_util, s.power_w), (0, Some(71.0), Some(59.0), Some(247.87)));
        assert_eq!((s.pcie_rx_mbs, s.pcie_tx_mbs), (Some(162.0), Some(24.0)));
        assert_eq!(names.get(&0).map(String::as_str), Some("NVIDIA H200"));
        // Much later, the PCIe reading is stale and not attached.
        let Line::Reading(_, later, _) = lines.read("0, 1, 1, 1, 1, 1, 1, 1, NVIDIA H200", 9000, &mut names) else {
            panic!("a reading")
        };
        assert_eq!(later.pcie_rx_mbs, None);
        assert_eq!(
            lines.read("Failed to initialize NVML: Driver/library version mismatch", 9000, &mut names),
            Line::Unknown
        );
    }

    #[test]
    fn headerless_readings_and_dmon_on_stderr_need_no_header_on_stdout() {
        // As the script asks: query lines without a header on stdout, dmon on stderr.
        let (mut lines, mut names) = (Lines::new(), BTreeMap::new());
        for line in ["# gpu  rxpci  txpci", "# Idx   MB/s   MB/s", "    0    162     24"] {
            assert!(lines.read_dmon(line, 900), "{line}");
        }
        assert!(!lines.read_dmon("Failed to initialize NVML: Driver/library version mismatch", 900));
        let Line::Reading(gpu, s, _) =
            lines.read("0, 100, 63, 7087, 522.5, 1830, 3201, 45, NVIDIA H200", 1000, &mut names)
        else {
            panic!("a reading")
        };
        assert_eq!((gpu, s.gpu_util, s.mem_util, s.sm_clock_mhz), (0, Some(100.0), Some(63.0), Some(1830.0)));
        assert_eq!(s.pcie_rx_mbs, Some(162.0));
        assert_eq!(names.get(&0).map(String::as_str), Some("NVIDIA H200"));
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

    /// The script as a host runs it, with an `nvidia-smi` of an older driver
    /// (it knows `clocks_throttle_reasons`, not `clocks_event_reasons`) that
    /// lists a process of a Sleuth run, one of nobody's and one of a pid
    /// not on this host.
    #[test]
    fn the_script_takes_the_query_the_driver_knows_and_says_whose_processes_are_on_the_gpus() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = dir.path().join("nvidia-smi");
        std::fs::write(
            &fake,
            "#!/bin/sh\n\
             case \"$*\" in\n\
             *clocks_event_reasons*) echo 'Field \"clocks_event_reasons.active\" is not a valid field to query.'; exit 2 ;;\n\
             *clocks_throttle_reasons*) echo '0, 97, 60, 70000, 690.5, 1410, 2619, 84, 1980, 0x0000000000000040, <i>H100</i>'; exec sleep 30 ;;\n\
             *index,uuid*) echo '0, GPU-aa' ;;\n\
             *compute-apps*) echo \"GPU-aa, $RUNS_PID, 70000, python3\"; echo 'GPU-aa, '\"$OTHER_PID\"', 512, miner, <b>x</b>'; \
                             echo 'GPU-aa, 999999999, 1, ghost' ;;\n\
             *) exec sleep 30 ;;\n\
             esac\n",
        )
        .expect("write");
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        let spawn = |env: &[(&str, &str)]| {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30").env_clear();
            for (k, v) in env {
                cmd.env(k, v);
            }
            cmd.spawn().expect("sleep")
        };
        let mut run = spawn(&[("SLEUTH_RUN_DIR", "/home/u/.sleuth/runs/7-0a1b2c3d")]);
        let mut other = spawn(&[("HOME", "/root")]);
        // A server's process carries its run's directory and its token: its CPU is not the client's.
        let mut server =
            spawn(&[("SLEUTH_RUN_DIR", "/home/u/.sleuth/runs/7-0a1b2c3d"), ("SLEUTH_SERVER_TOKEN", "0123abcd")]);
        let path = format!("{}:/usr/bin:/bin", dir.path().display());
        // In a group of its own, as sshd starts it: its trap kills its group.
        let mut sh = std::process::Command::new("/bin/sh");
        std::os::unix::process::CommandExt::process_group(&mut sh, 0);
        let mut sh = sh
            .arg("-c")
            .arg(sampler_script())
            .env("PATH", &path)
            .env("RUNS_PID", run.id().to_string())
            .env("OTHER_PID", other.id().to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("sh");
        std::thread::sleep(std::time::Duration::from_millis(1500));
        drop(sh.stdin.take()); // as Sleuth ends it: the script's `read` returns, its trap kills the rest
        let out = sh.wait_with_output().expect("output");
        let _ = (run.kill(), other.kill(), server.kill(), run.wait(), other.wait(), server.wait());
        let (mut lines, mut names) = (Lines::new(), BTreeMap::new());
        let (mut readings, mut listings) = (Vec::new(), Vec::new());
        for line in lines.push(&out.stdout) {
            match lines.read(&line, 0, &mut names) {
                Line::Reading(gpu, sample, clock) => readings.push((gpu, sample, clock)),
                Line::Apps(listing) => listings.push(listing),
                Line::Known | Line::Unknown => {}
            }
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let (_, sample, clock) = readings.first().unwrap_or_else(|| panic!("a reading: {text}"));
        assert_eq!(
            (sample.sm_clock_mhz, clock.max_mhz, clock.reasons),
            (Some(1410.0), Some(1980.0), Some(domain::telemetry::ClockReasons(0x40)))
        );
        assert_eq!(names.get(&0).map(String::as_str), Some("<i>H100</i>"));
        let listing = listings.first().unwrap_or_else(|| panic!("a listing: {text}"));
        let cpu: Vec<(&str, u32)> = listing.cpu.iter().map(|c| (c.dir.as_str(), c.pid)).collect();
        assert!(cpu.contains(&("7-0a1b2c3d", run.id())), "the run's process's CPU: {text}");
        assert!(!cpu.iter().any(|(_, pid)| *pid == server.id()), "not its server's: {text}");
        let apps = &listing.apps;
        let owners: Vec<(&str, &contention::Owner)> = apps.iter().map(|a| (a.name.as_str(), &a.owner)).collect();
        assert_eq!(
            owners,
            [
                ("python3", &contention::Owner::Run("7-0a1b2c3d".into())),
                ("miner, <b>x</b>", &contention::Owner::Other),
                ("ghost", &contention::Owner::Elsewhere)
            ],
            "{text}"
        );
        assert_eq!(apps[0].mib, Some(70000.0));
    }
}
