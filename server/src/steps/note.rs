use domain::error::ApiError;
use domain::steps::note::{MAX_BYTES, NoteBody};

pub fn validate(note: NoteBody) -> Result<NoteBody, ApiError> {
    if note.body.trim().is_empty() {
        return Err(ApiError::invalid("A note needs some text."));
    }
    if note.body.len() > MAX_BYTES {
        return Err(ApiError::invalid(format!(
            "This note is {} bytes; the limit is {MAX_BYTES}. Split it into several notes.",
            note.body.len()
        )));
    }
    Ok(note)
}

pub fn render(note: &NoteBody) -> String {
    crate::markdown::to_safe_html(&note.body)
}
