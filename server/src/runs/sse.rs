//! Server-Sent Events as bytes: each frame is encoded once and shared by every
//! reader (`feed` for output, `events` for an investigation's news).

use bytes::Bytes;

/// One resumable event: `event`, `id` (the byte offset after it) and the
/// data, each of its lines as a `data:` field.
pub fn frame_with_id(event: &str, id: u64, data: &str) -> Bytes {
    let mut frame = String::with_capacity(data.len() + 40);
    frame.push_str("event: ");
    frame.push_str(event);
    frame.push_str("\nid: ");
    frame.push_str(&id.to_string());
    frame.push('\n');
    for line in data.split('\n') {
        frame.push_str("data: ");
        frame.push_str(line.strip_suffix('\r').unwrap_or(line));
        frame.push('\n');
    }
    frame.push('\n');
    Bytes::from(frame)
}

/// `event: NAME` and one `data:` line, without an id (not resumable).
pub fn frame(event: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_server_sent_events() {
        let frame = frame_with_id("output", 12, "a\nb\r\n");
        assert_eq!(&frame[..], b"event: output\nid: 12\ndata: a\ndata: b\ndata: \n\n");
        assert_eq!(&super::frame("run", "{}")[..], b"event: run\ndata: {}\n\n");
    }
}
