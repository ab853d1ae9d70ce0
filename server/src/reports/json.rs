//! JSON as the tools write it: Python's `json.dump` spells an unbounded
//! request rate `Infinity` and a missing mean `NaN`, which are not JSON.

use super::report::Report;
use serde_json::{Map, Value};

/// `bytes` as JSON, reading Python's `NaN` as null and `Infinity` as `"inf"`.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Ok(value) => Ok(value),
        Err(first) => {
            let mut fixed = Vec::with_capacity(bytes.len());
            std::io::Read::read_to_end(&mut Literals::new(bytes), &mut fixed).map_err(serde_json::Error::io)?;
            if fixed == bytes { Err(first) } else { serde_json::from_slice(&fixed).map_err(|_| first) }
        }
    }
}

/// One line of JSON Lines as an object.
pub fn object_line(line: &str) -> Option<Map<String, Value>> {
    match parse(line.trim().as_bytes()) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

/// A reader that rewrites Python's `NaN` and `Infinity` as it streams, for the
/// formats parsed from a stream (a trace, vLLM's detailed results).
pub struct Literals<R> {
    inner: R,
    /// Bytes not yet looked at (the tail of a read that may be a cut literal).
    pending: Vec<u8>,
    out: Vec<u8>,
    at: usize,
    in_string: bool,
    eof: bool,
}

impl<R: std::io::Read> Literals<R> {
    pub fn new(inner: R) -> Self {
        Self { inner, pending: Vec::new(), out: Vec::new(), at: 0, in_string: false, eof: false }
    }

    fn fill(&mut self) -> std::io::Result<()> {
        self.out.clear();
        self.at = 0;
        while self.out.is_empty() && !(self.eof && self.pending.is_empty()) {
            if !self.eof {
                let mut chunk = [0u8; 64 * 1024];
                let n = self.inner.read(&mut chunk)?;
                self.eof = n == 0;
                self.pending.extend_from_slice(&chunk[..n]);
            }
            // Keep the last few bytes back unless at the end: they may be the
            // start of a literal the next read completes.
            let upto = if self.eof { self.pending.len() } else { self.pending.len().saturating_sub(9) };
            let mut i = 0;
            while i < upto {
                // Copy a run of plain bytes at once: inside a string only a quote
                // or a backslash matters, outside it a quote or a literal's start.
                let run = &self.pending[i..upto];
                let plain = if self.in_string {
                    run.iter().position(|b| matches!(b, b'"' | b'\\'))
                } else {
                    run.iter().position(|b| matches!(b, b'"' | b'N' | b'I' | b'-'))
                }
                .unwrap_or(run.len());
                self.out.extend_from_slice(&run[..plain]);
                i += plain;
                if i >= upto {
                    break;
                }
                let b = self.pending[i];
                if self.in_string {
                    if b == b'\\' {
                        // The escaped byte goes with it, whatever it is.
                        let end = (i + 2).min(self.pending.len());
                        self.out.extend_from_slice(&self.pending[i..end]);
                        i = end;
                    } else {
                        self.in_string = false;
                        self.out.push(b);
                        i += 1;
                    }
                    continue;
                }
                let rest = &self.pending[i..];
                let replaced: Option<(&[u8], usize)> = if rest.starts_with(b"NaN") {
                    Some((b"null", 3))
                } else if rest.starts_with(b"-Infinity") {
                    Some((b"\"-inf\"", 9))
                } else if rest.starts_with(b"Infinity") {
                    Some((b"\"inf\"", 8))
                } else {
                    None
                };
                match replaced {
                    Some((with, len)) => {
                        self.out.extend_from_slice(with);
                        i += len;
                    }
                    None => {
                        self.in_string = b == b'"';
                        self.out.push(b);
                        i += 1;
                    }
                }
            }
            self.pending.drain(..i.min(self.pending.len()));
        }
        Ok(())
    }
}

impl<R: std::io::Read> std::io::Read for Literals<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at >= self.out.len() {
            self.fill()?;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A number field, if it is a finite number.
pub fn number(object: &Map<String, Value>, field: &str) -> Option<f64> {
    object.get(field).and_then(Value::as_f64).filter(|v| v.is_finite())
}

/// A rate as a key: `10.0` → `10`, `"inf"` stays.
pub fn rate_text(value: &Value) -> Option<String> {
    match value {
        Value::Number(n) => n.as_f64().map(|v| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v}") }),
        Value::String(s) if !s.is_empty() && s.len() <= 40 => Some(s.clone()),
        _ => None,
    }
}

use super::error::{ReadError, ReadResult};

/// A reader of JSON Lines, fed one object per line.
pub trait LineReader: Send {
    fn line(&mut self, object: Map<String, Value>) -> ReadResult<()>;
    fn finish(self: Box<Self>) -> Report;
    /// What was read before `error` stopped it, with the error as a note.
    fn finish_with(self: Box<Self>, error: ReadError) -> Report {
        let mut report = self.finish();
        report.notes.push(error.to_string());
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_are_read_outside_strings_only() {
        let v = parse(br#"{"rate": Infinity, "low": -Infinity, "mean": NaN, "s": "NaN Infinity \" NaN"}"#).unwrap();
        assert_eq!(v["rate"], "inf");
        assert_eq!(v["low"], "-inf");
        assert!(v["mean"].is_null());
        assert_eq!(v["s"], "NaN Infinity \" NaN");
        assert!(parse(b"{\"a\": 1").is_err());
    }

    #[test]
    fn literals_are_rewritten_in_a_stream_cut_anywhere() {
        use std::io::Read;
        let text = br#"{"rate": Infinity, "xs": [NaN, 1.5, -Infinity], "s": "a \" NaN"}"#;
        /// Hands out one byte per read: every cut a stream can have.
        struct Bytewise<'a>(&'a [u8]);
        impl Read for Bytewise<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let Some((first, rest)) = self.0.split_first() else { return Ok(0) };
                buf[0] = *first;
                self.0 = rest;
                Ok(1)
            }
        }
        let mut out = String::new();
        Literals::new(Bytewise(text)).read_to_string(&mut out).unwrap();
        assert_eq!(out, r#"{"rate": "inf", "xs": [null, 1.5, "-inf"], "s": "a \" NaN"}"#);
    }
}
