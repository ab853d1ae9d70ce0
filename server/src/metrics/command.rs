//! `sleuth extract FILE…`: the extractors from a shell, for scripts and for
//! checking what Sleuth will see in an output before running it for real. A
//! report file (`crate::reports`: a vLLM result, a GuideLLM report, a PyTorch
//! trace…) is read as a run's artifact would be, as a stream; anything else as
//! printed output.

use super::custom::Extractor;
use crate::cli::ExtractArgs;
use crate::error::{Context, Error, Result};
use std::io::{Read, Write};

/// `NAME:UNIT:REGEX` (the regex may contain `:`).
pub fn parse_extractor(spec: &str) -> Result<Extractor> {
    let mut parts = spec.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), Some(unit), Some(pattern)) => Ok(Extractor::new(name, pattern, unit)?),
        _ => Err(Error::usage(format!("--extractor {spec:?}: write NAME:UNIT:REGEX"))),
    }
}

pub fn run(args: ExtractArgs) -> Result<()> {
    let extractors = args.extractors.iter().map(|s| parse_extractor(s)).collect::<Result<Vec<_>, _>>()?;
    let several = args.files.len() > 1;
    let mut out = Vec::new();
    for file in &args.files {
        let source = several.then(|| file.display().to_string());
        if file.as_os_str() != "-" {
            let opened = std::fs::File::open(file).context(format!("reading {}", file.display()))?;
            match crate::reports::read(&file.display().to_string(), opened) {
                Some(Ok(report)) => {
                    for note in &report.notes {
                        eprintln!("{}: {note}", file.display());
                    }
                    let (derived, _) = crate::reports::derive::derive(std::slice::from_ref(&report), None);
                    let found = report.measurements.into_iter().chain(derived);
                    out.extend(found.map(|measurement| Sourced { measurement, source: source.clone() }));
                    continue;
                }
                Some(Err(note)) => {
                    eprintln!("{note}");
                    continue;
                }
                None => {}
            }
        }
        let mut bytes = Vec::new();
        let read = if file.as_os_str() == "-" {
            std::io::stdin().read_to_end(&mut bytes).map(|_| ())
        } else {
            std::fs::File::open(file).and_then(|mut f| f.read_to_end(&mut bytes)).map(|_| ())
        };
        read.context(format!("reading {}", file.display()))?;
        let text = String::from_utf8_lossy(&bytes);
        let mut found = super::extract(&text);
        for extractor in &extractors {
            found.extend(extractor.extract(&text));
        }
        out.extend(found.into_iter().map(|measurement| Sourced { measurement, source: source.clone() }));
    }
    let json = serde_json::to_string_pretty(&out).context("measurements as JSON")?;
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{json}") {
        // `sleuth extract … | head` closing the pipe early is not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::internal("writing the output", e)),
        _ => Ok(()),
    }
}

#[derive(serde::Serialize)]
struct Sourced {
    #[serde(flatten)]
    measurement: domain::metrics::Measurement,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<String>,
}
