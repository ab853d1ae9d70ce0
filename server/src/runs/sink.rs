//! A run's output on its way to the store: kept within the step's output
//! limit and the data disk's floor, and what could not be kept counted and
//! said on the run (a leaf: the runner feeds it, [`Stored::tell`] says what
//! became of it).

use super::life::OwnedEnd;
use crate::output::{OutputWriter, Stream};
use crate::time::now_ms;
use domain::runs::{RunStatus, human_bytes};
use std::path::PathBuf;

/// How much output a run stores between looks at the disk's free space, at
/// most; less as the disk nears the point where storing stops (a small disk's
/// half-floor is under a MB, and fast output overshot it into a full disk).
const SPACE_CHECK_BYTES: u64 = 1 << 20;
const SPACE_CHECK_MIN_BYTES: u64 = 16 << 10;

/// Why storing stopped for the disk: the directory, bytes free there, the floor.
pub(super) type LowSpace = (PathBuf, u64, u64);

/// The disk under the output, as the runner sees it.
pub(super) enum Space {
    /// This many bytes may still be stored before storing stops.
    Room(u64),
    Short(LowSpace),
}

pub(super) struct Sink {
    writer: OutputWriter,
    /// The step's `output_limit_bytes`.
    limit: u64,
    /// Bytes printed and not kept.
    dropped: u64,
    /// Where storing stopped short of the limit (the disk, or a write that
    /// failed): nothing more is written, the rest is counted as dropped.
    stored_until: Option<u64>,
    low_space: Option<LowSpace>,
    next_space_check: u64,
    write_error: Option<String>,
    /// Whether output arrived since the last flush (readers see only what is flushed).
    pub(super) unflushed: bool,
}

/// What became of a run's output once its writer closed.
pub(super) struct Stored {
    pub(super) stdout: u64,
    pub(super) stderr: u64,
    pub(super) lines: u64,
    len: u64,
    limit: u64,
    dropped: u64,
    low_space: Option<LowSpace>,
    write_error: Option<String>,
}

impl Sink {
    pub(super) fn new(writer: OutputWriter, limit: u64) -> Self {
        Self {
            writer,
            limit,
            dropped: 0,
            stored_until: None,
            low_space: None,
            next_space_check: SPACE_CHECK_BYTES,
            write_error: None,
            unflushed: false,
        }
    }

    /// Stores what fits and counts the rest; every megabyte (output arrives
    /// faster than the runner's clock ticks) asks `short_of_space`.
    pub(super) async fn append(&mut self, stream: Stream, data: &[u8], short_of_space: impl FnOnce(u64) -> Space) {
        let until = self.stored_until.unwrap_or(self.limit).min(self.limit);
        let room = usize::try_from(until.saturating_sub(self.writer.len)).unwrap_or(usize::MAX);
        let keep = data.len().min(room);
        self.dropped += (data.len() - keep) as u64;
        if let Err(e) = self.writer.append(stream, &data[..keep], now_ms()).await {
            self.failed(e);
        }
        if self.writer.len >= self.next_space_check && self.stored_until.is_none() {
            self.check_space(short_of_space);
        }
        self.unflushed = true;
    }

    /// Hands what arrived to the store and its live readers.
    pub(super) async fn flush(&mut self) {
        if let Err(e) = self.writer.flush().await {
            self.failed(e);
        }
        self.unflushed = false;
    }

    /// Stops storing here when the disk is down to half its floor.
    pub(super) fn check_space(&mut self, short_of_space: impl FnOnce(u64) -> Space) {
        if self.stored_until.is_some() {
            return;
        }
        // What is still in the writer's buffer takes space once it is written.
        match short_of_space(self.writer.buffered()) {
            Space::Short(short) => {
                self.stored_until = Some(self.writer.len);
                self.low_space = Some(short);
            }
            // Looked at again well before the room is used up.
            Space::Room(room) => {
                self.next_space_check = self.writer.len + (room / 4).clamp(SPACE_CHECK_MIN_BYTES, SPACE_CHECK_BYTES);
            }
        }
    }

    /// Stdout bytes, stderr bytes and lines stored so far (the run row's counts).
    pub(super) fn counts(&self) -> (u64, u64, u64) {
        (self.writer.stdout, self.writer.stderr, self.writer.lines)
    }

    fn failed(&mut self, error: std::io::Error) {
        self.write_error.get_or_insert(error.to_string());
        self.stored_until.get_or_insert(self.writer.len);
    }

    pub(super) async fn finish(self) -> Stored {
        let (stdout, stderr, lines, len) = (self.writer.stdout, self.writer.stderr, self.writer.lines, self.writer.len);
        let mut write_error = self.write_error;
        if let Err(e) = self.writer.finish().await {
            write_error.get_or_insert(e.to_string());
        }
        Stored {
            stdout,
            stderr,
            lines,
            len,
            limit: self.limit,
            dropped: self.dropped,
            low_space: self.low_space,
            write_error,
        }
    }
}

impl Stored {
    /// Says on the run's end what was not kept and why; a run is never
    /// `succeeded` about output it did not keep.
    pub(super) fn tell(self, end: &mut OwnedEnd) {
        let dropped = self.dropped;
        if let Some((at, free, floor)) = self.low_space {
            end.error = Some(format!(
                "Storing output stopped at {}: {} was left free in {}, half of the --min-free floor of {}, which is \
                 kept for the notebook itself. {dropped} more bytes were printed and not kept; the command ran to its end.",
                human_bytes(self.len),
                human_bytes(free),
                at.display(),
                human_bytes(floor)
            ));
            fail(end);
        } else if dropped > 0 && self.write_error.is_none() {
            let note = format!(
                "Output past the step's limit of {} was not kept ({dropped} more bytes were printed); \
                 the command ran to its end. Raise output_limit_bytes on the step to keep more.",
                human_bytes(self.limit)
            );
            end.error = Some(match end.error.take() {
                Some(before) => format!("{before} {note}"),
                None => note,
            });
        }
        if let Some(e) = self.write_error {
            let after =
                if dropped > 0 { format!(" ({dropped} more bytes were printed and not kept)") } else { String::new() };
            end.error = Some(format!("Some output could not be stored: {e}{after}"));
            fail(end);
        }
    }
}

fn fail(end: &mut OwnedEnd) {
    if end.status == RunStatus::Succeeded {
        end.status = RunStatus::Failed;
    }
}
