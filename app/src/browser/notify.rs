//! Being told when a run, or a whole sweep, that the reader started ends:
//! real sweeps take tens of minutes, and the tab is elsewhere by then. The
//! investigation's stream says each run's change (`live`); a run of the
//! reader's (its `who` is the signed-in name; everyone's without accounts)
//! that this page saw going and that has now ended is told once: a sweep's
//! when its last run ends, with how many succeeded. While the tab is hidden
//! the page's title starts with "●" and the news; where the reader allowed
//! it (asked on their first Run), a browser notification too.

use super::dom;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use web_sys::{Event, Notification, NotificationOptions, NotificationPermission};

#[derive(Default)]
struct Seen {
    /// Runs of the reader's going on (queued or running), with their sweep.
    going: HashMap<i64, Option<i64>>,
    /// Runs already told of.
    told: HashSet<i64>,
    /// Per sweep: its runs that ended, and those that succeeded.
    sweeps: HashMap<i64, (u32, u32)>,
    /// The page's own title, while the news is in front of it.
    title: Option<String>,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::default();
}

pub fn install() {
    let document = dom::document();
    // Asking needs a gesture: the reader's first Run.
    dom::listen(&document, "click", true, |event: Event| {
        if dom::closest(&event, "button.run-button").is_some()
            && Notification::permission() == NotificationPermission::Default
        {
            let _ = Notification::request_permission();
        }
    });
    dom::listen(&document, "visibilitychange", false, |_| {
        if !dom::document().hidden()
            && let Some(title) = SEEN.with_borrow_mut(|s| s.title.take())
        {
            dom::document().set_title(&title);
        }
    });
}

/// Runs shown going when a page is drawn (opened, or drawn anew): their end is news.
pub fn drawn(root: &web_sys::Element) {
    let going: Vec<i64> = dom::all(root, ".run[data-status=queued], .run[data-status=running]")
        .iter()
        .filter_map(|run| dom::number::<i64>(run, "data-run"))
        .collect();
    SEEN.with_borrow_mut(|s| {
        for id in going {
            s.going.entry(id).or_insert(None);
        }
    });
}

/// The signed-in reader's name; none without accounts.
fn me() -> Option<String> {
    dom::find("header a.me").and_then(|a| a.text_content()).map(|n| n.trim().to_string())
}

/// A run changed (`event: run` of the investigation's stream).
pub fn run_changed(data: &str) {
    let Ok(run) = serde_json::from_str::<domain::runs::Run>(data) else { return };
    // Without accounts, everyone is the one reader.
    if me().is_some_and(|me| run.who.as_deref() != Some(me.as_str())) {
        return;
    }
    let news = SEEN.with_borrow_mut(|s| {
        if !run.status.is_finished() {
            s.going.insert(run.id, run.sweep_id);
            return None;
        }
        let seen_going = s.going.remove(&run.id).is_some();
        if !seen_going || !s.told.insert(run.id) {
            return None;
        }
        let status = run.status.as_str().replace('_', " ");
        match run.sweep_id {
            None => Some((format!("Run {} {status}", run.id), run.command.clone())),
            Some(sweep) => {
                let tally = s.sweeps.entry(sweep).or_default();
                tally.0 += 1;
                tally.1 += u32::from(run.status == domain::runs::RunStatus::Succeeded);
                let (ended, succeeded) = *tally;
                // The sweep goes on while a run of it is still going.
                (!s.going.values().any(|v| *v == Some(sweep))).then(|| {
                    (format!("Sweep {sweep} ended: {succeeded} of {ended} runs succeeded"), run.command.clone())
                })
            }
        }
    });
    if let Some((title, body)) = news {
        tell(&title, &body);
    }
}

fn tell(title: &str, body: &str) {
    let document = dom::document();
    let away = document.hidden() || !document.has_focus().unwrap_or(true);
    if document.hidden() {
        let own = SEEN.with_borrow_mut(|s| s.title.get_or_insert_with(|| document.title()).clone());
        document.set_title(&format!("● {title} · {own}"));
    }
    if away && Notification::permission() == NotificationPermission::Granted {
        let options = NotificationOptions::new();
        options.set_body(body);
        options.set_tag("sleuth-run");
        let _ = Notification::new_with_options(title, &options);
    }
}
