//! What the terminal client prints that did not come byte for byte from the
//! command's own output — errors, a server's messages, a host's server log —
//! is made inert first: a malicious server or host could otherwise retitle
//! the terminal, write the clipboard (OSC 52), clear the screen or worse.
//! Removed: escape sequences whole (CSI, OSC, DCS, SOS, PM, APC, and two-byte
//! ones), C0 controls but newline and tab, DEL, and C1 controls.

/// A sanitizer over a byte stream: a sequence split between two chunks is
/// still removed whole.
#[derive(Default)]
pub struct Strip {
    state: State,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// Inside a CSI sequence, until its final byte.
    Csi,
    /// Inside a string sequence (OSC, DCS, SOS, PM, APC), until BEL or ST.
    Str,
    /// ESC inside a string sequence: `\` ends it.
    StrEscape,
    /// Inside a UTF-8 character whose lead byte was seen (C1 controls are
    /// the two-byte characters U+0080–U+009F).
    Utf8Lead,
}

impl Strip {
    /// The printable part of `bytes`, given what came before.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        for &b in bytes {
            self.state = match self.state {
                State::Text => match b {
                    0x1b => State::Escape,
                    b'\n' | b'\t' => {
                        out.push(b);
                        State::Text
                    }
                    0x00..=0x1f | 0x7f => State::Text,
                    // U+0080–U+009F are C2 80–C2 9F in UTF-8.
                    0xc2 => State::Utf8Lead,
                    _ => {
                        out.push(b);
                        State::Text
                    }
                },
                State::Utf8Lead => match b {
                    0x80..=0x9f => State::Text,
                    _ => {
                        out.push(0xc2);
                        self.state = State::Text;
                        out.extend(self.feed(&[b]));
                        self.state
                    }
                },
                State::Escape => match b {
                    b'[' => State::Csi,
                    b']' | b'P' | b'X' | b'^' | b'_' => State::Str,
                    // ESC plus one byte (or an intermediate and its final byte: rare, dropped alike).
                    _ => State::Text,
                },
                State::Csi => match b {
                    0x40..=0x7e => State::Text,
                    _ => State::Csi,
                },
                State::Str => match b {
                    0x07 => State::Text,
                    0x1b => State::StrEscape,
                    _ => State::Str,
                },
                State::StrEscape => match b {
                    b'\\' => State::Text,
                    _ => State::Str,
                },
            };
        }
        out
    }
}

/// `text` made inert for a terminal (one piece: nothing carries over).
pub fn printable(text: &str) -> String {
    String::from_utf8_lossy(&Strip::default().feed(text.as_bytes())).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_are_removed_whole() {
        let hostile =
            "a\x1b]0;pwned title\x07b\x1b]52;c;ZWNobyBoaQ==\x1b\\c\x1b[2J\x1b[1;31md\x1bce\u{9b}31mf\x07\x08\rg\n\th";
        assert_eq!(printable(hostile), "abcde31mfg\n\th");
        assert!(!printable(hostile).contains('\x1b'));
        assert_eq!(printable("héllo ✓"), "héllo ✓", "text stays");
    }

    #[test]
    fn a_sequence_split_between_chunks_is_still_removed() {
        let mut strip = Strip::default();
        let mut out = strip.feed(b"one\x1b]0;ti");
        out.extend(strip.feed(b"tle\x07two\x1b["));
        out.extend(strip.feed(b"2Jthree\xc2"));
        out.extend(strip.feed(b"\x9bfour"));
        assert_eq!(String::from_utf8(out).unwrap(), "onetwothreefour");
    }
}
