//! Domain types shared by the server and the browser. Everything here is plain data:
//! serializable, free of I/O, and cheap to clone.

use crate::steps::StepBody;
use serde::{Deserialize, Serialize};

/// Limits enforced by the server and announced by the UI (`maxlength`).
pub mod limits {
    pub const TITLE_CHARS: usize = 200;
    pub const QUESTION_CHARS: usize = 4_000;
    /// Request bodies larger than this are refused with 413 before parsing.
    pub const REQUEST_BYTES: usize = 1024 * 1024;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InvestigationStatus {
    Open,
    Closed,
}

impl InvestigationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "open" => Some(Self::Open),
            "closed" => Some(Self::Closed),
            _ => None,
        }
    }
}

/// A stored investigation status that is none of [`InvestigationStatus`].
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not an investigation status")]
pub struct UnknownInvestigationStatus(pub String);

/// For the store's rows.
impl TryFrom<String> for InvestigationStatus {
    type Error = UnknownInvestigationStatus;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse(&text).ok_or(UnknownInvestigationStatus(text))
    }
}

/// One row of the investigations list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct InvestigationSummary {
    pub id: String,
    pub url: String,
    pub title: String,
    pub question: String,
    pub status: InvestigationStatus,
    pub step_count: u32,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub updated_at: String,
    /// What its watches found: a change, or why one stopped ("step 3: regression −20.1 % from run #45").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<String>,
}

/// An investigation with its timeline, steps in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Investigation {
    pub id: String,
    pub url: String,
    pub title: String,
    pub question: String,
    pub status: InvestigationStatus,
    pub created_at: String,
    pub updated_at: String,
    pub steps: Vec<Step>,
    /// With their experiments computed; the page's summary table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hypotheses: Vec<crate::hypotheses::Hypothesis>,
    /// The investigation's own extractors (regexes over run output).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extractors: Vec<crate::metrics::ExtractorDef>,
    /// Its derived metrics (formulas over a run's measurements).
    #[serde(default)]
    pub derived: Vec<crate::metrics::DerivedDef>,
    /// Every measurement: from runs (also on each run) and entered by hand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measurements: Vec<crate::metrics::StoredMeasurement>,
    /// Its SLO (`TTFT <= 200 ms and TPOT <= 50 ms`), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<crate::distributions::SloView>,
    /// Latency against load, when a configuration was measured at several rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<crate::distributions::RateChart>,
    /// The chart of the investigation's main metric, when something was measured twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overview: Option<crate::metrics::Overview>,
    /// Who may read, edit, run and share it (the header's Members… list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<crate::accounts::Member>,
    /// Every comment, oldest first; the page threads them under their steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<crate::comments::Comment>,
    /// Its view-only links; only owners get them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub share_links: Vec<crate::shares::ShareLink>,
    /// Its watched steps, each with the newest change it found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watches: Vec<crate::watches::Watch>,
    /// Its replays the reader may read, newest first, and the replay it is
    /// the copy of (linked both ways).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replays: Vec<ReplayLink>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<ReplayLink>,
    /// What the reader may do here (from their role): the page offers only these
    /// forms. The server checks every change regardless.
    #[serde(default)]
    pub abilities: Abilities,
    /// Every step in order, when `steps` holds only those a page shows in full
    /// (see [`StepWindow`]); empty when `steps` is the whole timeline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outline: Vec<StepOutline>,
    /// [`crate::runs::runs_fingerprint`] of every run, folded steps' included.
    #[serde(default)]
    pub runs_fingerprint: u64,
}

/// A step the page does not show in full: enough to list it, link to it, and
/// land on it from a permalink (its comments' and annotations' anchors too).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct StepOutline {
    pub id: i64,
    pub position: u32,
    pub kind: crate::steps::StepKind,
    /// [`StepBody::headline`].
    pub headline: String,
    /// A command step's environment, `NCCL_PROTO=LL` (empty: none); `None` for other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// A sweep's configurations (a command step with a matrix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<crate::sweeps::Config>,
    pub runs: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<i64>,
    pub created_at: String,
}

impl Investigation {
    /// Every step as (id, position, kind, headline, config), folded or not.
    pub fn step_labels(&self) -> Vec<StepOutline> {
        if !self.outline.is_empty() {
            return self.outline.clone();
        }
        self.steps.iter().map(Step::outline).collect()
    }
}

/// Which steps of a long investigation a page shows in full: the first and last
/// few, and the parts the reader asked for (`?steps=21-60`, or by scrolling).
/// The rest are listed as [`StepOutline`]s. Short investigations show everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct StepWindow {
    /// Inclusive position ranges asked for, in order, merged.
    pub ranges: Vec<(u32, u32)>,
}

impl StepWindow {
    /// Investigations with at most this many steps show every step.
    pub const SHOW_ALL_UP_TO: u32 = 60;
    /// Steps always shown at the start and at the end of a long one: where
    /// the story begins, and where the work is now.
    pub const HEAD: u32 = 20;
    pub const TAIL: u32 = 10;
    /// Folded steps load in parts of this many.
    pub const PART: u32 = 40;
    /// More ranges than this in a query are ignored (the query is the reader's).
    const MAX_RANGES: usize = 32;

    /// `"21-60,101-140"`; pieces that are not `a-b` with 1 ≤ a ≤ b are skipped.
    pub fn parse(text: &str) -> Self {
        let ranges = text
            .split(',')
            .filter_map(|piece| {
                let (a, b) = piece.trim().split_once('-')?;
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                (a >= 1 && a <= b).then_some((a, b))
            })
            .take(Self::MAX_RANGES)
            .collect();
        Self::merged(ranges)
    }

    fn merged(mut ranges: Vec<(u32, u32)>) -> Self {
        ranges.sort_unstable();
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        Self { ranges: out }
    }

    /// The query value that asks for the same: `"21-60,101-140"`.
    pub fn query(&self) -> String {
        self.ranges.iter().map(|(a, b)| format!("{a}-{b}")).collect::<Vec<_>>().join(",")
    }

    /// Whether `range` is shown already (asked for, not counting head and tail).
    pub fn covers(&self, range: (u32, u32)) -> bool {
        self.ranges.iter().any(|(a, b)| *a <= range.0 && range.1 <= *b)
    }

    /// The same window with `range` shown as well.
    pub fn with(&self, range: (u32, u32)) -> Self {
        let mut ranges = self.ranges.clone();
        ranges.push(range);
        Self::merged(ranges)
    }

    /// Whether the step at `position` of `count` is shown in full.
    pub fn shows(&self, position: u32, count: u32) -> bool {
        count <= Self::SHOW_ALL_UP_TO
            || position <= Self::HEAD
            || position > count.saturating_sub(Self::TAIL)
            || self.ranges.iter().any(|(a, b)| (*a..=*b).contains(&position))
    }

    /// The part a folded position belongs to: parts are counted from the end of
    /// the head, so every reader's "steps 21–60" is the same part.
    pub fn part_of(position: u32, count: u32) -> (u32, u32) {
        let first = Self::HEAD + 1;
        let start = first + position.saturating_sub(first) / Self::PART * Self::PART;
        (start, (start + Self::PART - 1).min(count.saturating_sub(Self::TAIL).max(start)))
    }
}

/// What one reader may do in an investigation. A share link's reader: nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Abilities {
    /// Comment and reply (every member, viewers too).
    #[serde(default)]
    pub comment: bool,
    /// Notes, steps, hypotheses, annotations, measurements; resolving threads.
    pub edit: bool,
    /// Run commands, fetch snippets, grep on hosts.
    pub run: bool,
    /// Members, share links, delete.
    pub own: bool,
    /// The reader is a signed-in user, whose name signs what they write
    /// (without accounts, a form may ask for a name).
    #[serde(default)]
    pub named: bool,
}

impl Abilities {
    /// What a member with `role` may do on the investigation's pages.
    pub fn of(role: crate::accounts::Role) -> Self {
        use crate::accounts::Role;
        Self {
            comment: true,
            edit: role >= Role::Editor,
            run: role >= Role::Runner,
            own: role >= Role::Owner,
            named: false,
        }
    }
}

impl Abilities {
    pub const ALL: Self = Self { comment: true, edit: true, run: true, own: true, named: false };
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct NewInvestigation {
    pub title: String,
    #[serde(default)]
    pub question: Option<String>,
}

/// A partial update: absent fields are left as they are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InvestigationPatch {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub question: Option<String>,
    #[serde(default)]
    pub status: Option<InvestigationStatus>,
}

/// One entry of an investigation's timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct Step {
    pub id: i64,
    pub investigation_id: String,
    /// 1-based place in the timeline.
    pub position: u32,
    /// `kind` plus the kind's own fields, e.g. `"kind":"note","body":"…"`.
    #[serde(flatten)]
    pub body: StepBody,
    /// Server-rendered, sanitized HTML for kinds that have a rich presentation.
    pub html: Option<String>,
    /// Stable link to the step: `/i/{id}#step-{step_id}`.
    pub url: String,
    /// Runs of a command step, oldest first; empty for other kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<crate::runs::Run>,
    /// Snapshots of a snippet step, oldest first; empty for other kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<crate::steps::snippet::Snapshot>,
    /// Annotations of a snippet step, by first line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<crate::steps::snippet::Annotation>,
    /// The newest result of a grep step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::steps::grep::SearchResult>,
    /// What a calculator step works out from its inputs (the page shows the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<crate::steps::calculator::CalculatorResults>,
    pub created_at: String,
    pub updated_at: String,
    /// Bumped by every save; a save that names an older one is refused (409).
    #[serde(default)]
    pub version: i64,
    /// Who saved it last (`None`: never edited, or before accounts).
    #[serde(default)]
    pub updated_by: Option<String>,
}

impl Step {
    pub fn anchor(&self) -> String {
        step_anchor(self.id)
    }

    pub fn outline(&self) -> StepOutline {
        StepOutline {
            id: self.id,
            position: self.position,
            kind: self.body.kind(),
            headline: self.body.headline(),
            config: match &self.body {
                StepBody::Command(c) => {
                    Some(c.env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "))
                }
                _ => None,
            },
            sweep: match &self.body {
                StepBody::Command(c) => crate::sweeps::configurations(&c.matrix),
                _ => Vec::new(),
            },
            runs: u32::try_from(self.runs.len()).unwrap_or(u32::MAX),
            comments: Vec::new(),
            annotations: self.annotations.iter().map(|a| a.id).collect(),
            created_at: self.created_at.clone(),
        }
    }
}

pub fn investigation_url(id: &str) -> String {
    format!("/i/{id}")
}

pub fn step_anchor(step_id: i64) -> String {
    format!("step-{step_id}")
}

pub fn step_url(investigation_id: &str, step_id: i64) -> String {
    format!("/i/{investigation_id}#{}", step_anchor(step_id))
}

/// "2026-11-30T07:21:33.123Z" → "2026-11-30 07:21 UTC". Pure string work, so the
/// server and the browser render the same text and hydration matches.
pub fn short_time(rfc3339: &str) -> String {
    match (rfc3339.get(0..10), rfc3339.get(11..16)) {
        (Some(date), Some(hm)) => format!("{date} {hm} UTC"),
        _ => rfc3339.to_string(),
    }
}

/// Where a step at position `from` lands when dropped on the step at `over`,
/// after it or before it (positions count from 1; taking the step out first
/// shifts those behind it up by one).
pub fn drop_position(from: u32, over: u32, after: bool) -> u32 {
    let wanted = if after { over + 1 } else { over };
    if wanted > from { wanted - 1 } else { wanted }
}

/// An RFC 3339 UTC time as the API writes it (`2026-12-03T05:46:20.123Z`) in
/// Unix milliseconds; `None` for anything else.
pub fn parse_time_ms(rfc3339: &str) -> Option<i64> {
    let b = rfc3339.as_bytes();
    let num = |from: usize, to: usize| -> Option<i64> { rfc3339.get(from..to)?.parse().ok() };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hh, mm, ss) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let millis = match (b[19], rfc3339.get(20..23)) {
        (b'.', Some(frac)) => frac.parse::<i64>().ok()?,
        (b'Z', _) => 0,
        _ => return None,
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + millis)
}

/// How long ago (or from now) `rfc3339` is at `now_ms`, as people say it:
/// "just now", "3 min ago", "5 h ago", "yesterday", "4 days ago", "in 6 days";
/// beyond a week, the day. The exact time goes in a tooltip beside it.
pub fn relative_time(rfc3339: &str, now_ms: i64) -> String {
    let Some(at) = parse_time_ms(rfc3339) else { return short_time(rfc3339) };
    let seconds = (now_ms - at) / 1000;
    let (ahead, s) = (seconds < 0, seconds.abs());
    let said = |n: i64, unit: &str| if ahead { format!("in {n} {unit}") } else { format!("{n} {unit} ago") };
    match s {
        0..45 => {
            if ahead {
                "in a moment".into()
            } else {
                "just now".into()
            }
        }
        45..3_570 => said((s + 30) / 60, "min"),
        3_570..86_400 => said((s + 1_800) / 3_600, "h"),
        86_400..172_800 => {
            if ahead {
                "tomorrow".into()
            } else {
                "yesterday".into()
            }
        }
        172_800..604_800 => said((s + 43_200) / 86_400, "days"),
        _ => rfc3339.get(0..10).unwrap_or(rfc3339).to_string(),
    }
}

/// What a share link shows: the investigation, read-only, and the link's terms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct SharedView {
    pub investigation: Investigation,
    pub expires_at: Option<String>,
    pub hide_hosts: bool,
    pub shared_by: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_step_lands_where_the_mark_showed() {
        // Five steps; #2 dropped below #4 goes to 4, above #4 to 3.
        assert_eq!(drop_position(2, 4, true), 4);
        assert_eq!(drop_position(2, 4, false), 3);
        // #5 dropped above #1 goes first; below #1, second.
        assert_eq!(drop_position(5, 1, false), 1);
        assert_eq!(drop_position(5, 1, true), 2);
        // Dropped on itself, or just where it is: no move.
        assert_eq!(drop_position(3, 3, false), 3);
        assert_eq!(drop_position(3, 3, true), 3);
        assert_eq!(drop_position(3, 2, true), 3);
        assert_eq!(drop_position(3, 4, false), 3);
    }

    #[test]
    fn times_read_back_and_are_said_relative_to_now() {
        assert_eq!(parse_time_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(parse_time_ms("2026-12-03T05:46:20.123Z"), Some(1_796_276_780_123));
        assert_eq!(parse_time_ms("2024-02-29T23:59:59Z"), Some(1_709_251_199_000));
        for bad in ["", "yesterday", "2026-13-01T00:00:00Z", "2026-12-03 05:46:20", "2026-12-03T05:46:20+01:00"] {
            assert_eq!(parse_time_ms(bad), None, "{bad}");
        }
        let at = "2026-12-03T05:46:20.000Z";
        let now = parse_time_ms(at).unwrap();
        let said = |seconds: i64| relative_time(at, now + seconds * 1000);
        assert_eq!(said(10), "just now");
        assert_eq!(said(-10), "in a moment");
        assert_eq!(said(50), "1 min ago");
        assert_eq!(said(3 * 60 + 10), "3 min ago");
        assert_eq!(said(59 * 60 + 40), "1 h ago", "not \"60 min ago\"");
        assert_eq!(said(5 * 3600), "5 h ago");
        assert_eq!(said(-5 * 3600), "in 5 h");
        assert_eq!(said(30 * 3600), "yesterday");
        assert_eq!(said(4 * 86_400 + 10), "4 days ago");
        assert_eq!(said(-6 * 86_400 - 10), "in 6 days");
        assert_eq!(said(-7 * 86_400 + 5), "in 7 days", "a link made now for 7 days");
        assert_eq!(said(30 * 86_400), "2026-12-03", "beyond a week: the day");
        assert_eq!(relative_time("not a time", now), "not a time");
    }

    #[test]
    fn short_time_formats_and_tolerates_garbage() {
        assert_eq!(short_time("2026-11-30T07:21:33.123Z"), "2026-11-30 07:21 UTC");
        assert_eq!(short_time("yesterday"), "yesterday");
    }

    #[test]
    fn note_step_serializes_flat() {
        let step = Step {
            id: 7,
            investigation_id: "abc".into(),
            position: 1,
            body: StepBody::Note(crate::steps::note::NoteBody { body: "# hi".into() }),
            html: None,
            url: step_url("abc", 7),
            runs: vec![],
            snapshots: vec![],
            annotations: vec![],
            search: None,
            results: None,
            created_at: "t".into(),
            updated_at: "t".into(),
            version: 3,
            updated_by: Some("ada".into()),
        };
        let json = serde_json::to_value(&step).unwrap();
        assert_eq!(json["version"], 3);
        assert_eq!(json["kind"], "note");
        assert_eq!(json["body"], "# hi");
        assert_eq!(json["url"], "/i/abc#step-7");
        let back: Step = serde_json::from_value(json).unwrap();
        assert_eq!(back, step);
    }

    #[test]
    fn windows_parse_merge_and_ignore_nonsense() {
        let w = StepWindow::parse("61-100, 21-60,9-1,abc,0-3,<script>,101-101");
        assert_eq!(w.ranges, vec![(21, 101)], "adjacent ranges merge; bad pieces are skipped");
        assert_eq!(w.query(), "21-101");
        assert_eq!(StepWindow::parse("").ranges, vec![]);
        assert_eq!(StepWindow::parse(&"1-2,".repeat(1000)).ranges, vec![(1, 2)]);
        let w = StepWindow::default().with((61, 100));
        assert!(w.covers((61, 100)) && w.covers((70, 80)) && !w.covers((21, 60)));
        // 60 steps: everything; 500: head, tail, and what was asked.
        assert!((1..=60).all(|p| w.shows(p, 60)));
        assert!(w.shows(20, 500) && !w.shows(21, 500) && w.shows(61, 500) && !w.shows(101, 500));
        assert!(w.shows(491, 500) && !w.shows(490, 500));
    }

    #[test]
    fn parts_are_the_same_for_every_reader() {
        assert_eq!(StepWindow::part_of(21, 500), (21, 60));
        assert_eq!(StepWindow::part_of(60, 500), (21, 60));
        assert_eq!(StepWindow::part_of(412, 500), (381, 420));
        // The last part stops where the tail begins.
        assert_eq!(StepWindow::part_of(470, 500), (461, 490));
        assert_eq!(StepWindow::part_of(62, 75), (61, 65), "a short last part");
    }
}

/// A replay as the investigations it joins link it: the replay's page, the
/// copy it ran in, where and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(schemars::JsonSchema))]
pub struct ReplayLink {
    pub id: i64,
    pub url: String,
    /// The copy it ran in, and the investigation replayed (none from another Sleuth).
    pub investigation: String,
    pub original: Option<String>,
    pub host: Option<String>,
    pub created_at: String,
    pub created_by: Option<String>,
}
