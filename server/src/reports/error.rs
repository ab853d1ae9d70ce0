//! Why a reader gave up on a file, and where in it (a leaf: every reader and
//! `mod.rs` use it). It becomes a note on the run, never a failed run.

/// What was wrong with a report file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot be read: {0}")]
    Io(#[from] std::io::Error),
    /// serde's message says the line and column.
    #[error("not valid JSON ({0})")]
    Json(#[from] serde_json::Error),
    #[error("not valid YAML ({0})")]
    Yaml(#[from] yaml_rust2::ScanError),
    /// A format read whole that is over this many bytes.
    #[error("over {} MB; this format is read whole and was skipped", .0 >> 20)]
    TooBig(usize),
    /// The format's shape is there, but not a part a report needs
    /// (`no Total Time column`, `a table without rows`).
    #[error("{0}")]
    Missing(&'static str),
    /// Something of another tool where this format has its own (`not a vLLM result`).
    #[error("not a {0} result")]
    NotA(&'static str),
    #[error("not a JSON object (truncated?)")]
    NotAnObject,
    #[error("a row before any header")]
    RowBeforeHeader,
    #[error("not a row of the table (cut short?)")]
    NotARow,
    #[error("{found} cells where the header has {expected} (cut short?)")]
    Cells { found: usize, expected: usize },
    #[error("Total Time is in {0:?}, not a time unit nsys writes")]
    TimeUnit(String),
    #[error("a row of {0:.60} has no numbers")]
    NoNumbers(String),
    /// The blocking thread that read it died (a bug in a reader).
    #[error("the reader stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
    /// Where: a line of the file (1-based).
    #[error("line {line}: {error}")]
    At { line: usize, error: Box<ReadError> },
    /// Which file (an artifact's name, or `output`).
    #[error("{name}: {error}")]
    In { name: String, error: Box<ReadError> },
}

impl ReadError {
    pub fn at(line: usize, error: ReadError) -> Self {
        Self::At { line, error: Box::new(error) }
    }

    pub fn in_file(name: &str, error: ReadError) -> Self {
        Self::In { name: name.to_string(), error: Box::new(error) }
    }
}

pub type ReadResult<T> = Result<T, ReadError>;
