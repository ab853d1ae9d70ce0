//! The guards of a run or of a hypothesis's runs (`domain::guards`): a badge
//! saying whether any warns, and each guard's sentence and evidence, as text.

use domain::guards::{Guard, Level};
use leptos::prelude::*;

fn class(level: Level) -> &'static str {
    match level {
        Level::Ok => "guard ok",
        Level::Unknown => "guard unknown",
        Level::Warn => "guard warn",
        Level::Fail => "guard fail",
    }
}

/// "trusted (2 ok, 6 could not see)" or "1 fail, 2 warn".
pub fn summary(guards: &[Guard]) -> (Level, String) {
    let count = |l: Level| guards.iter().filter(|g| g.level == l).count();
    let worst = guards.iter().map(|g| g.level).max().unwrap_or(Level::Unknown);
    let text = if worst >= Level::Warn {
        let mut parts = Vec::new();
        for (l, word) in [(Level::Fail, "fail"), (Level::Warn, "warn")] {
            if count(l) > 0 {
                parts.push(format!("{} {word}", count(l)));
            }
        }
        format!("guards: {}", parts.join(", "))
    } else {
        // As the API's `trusted` says: a topology that is fine alone does not
        // vouch for what the runs measured.
        match domain::guards::trusted(guards) {
            Some(true) => format!("guards: trusted ({} ok, {} could not see)", count(Level::Ok), count(Level::Unknown)),
            _ => format!("guards: none could see these runs' numbers ({} unknown)", count(Level::Unknown)),
        }
    };
    (worst, text)
}

#[component]
pub fn Guards(guards: Vec<Guard>) -> impl IntoView {
    if guards.is_empty() {
        return ().into_any();
    }
    let (worst, said) = summary(&guards);
    let open = worst >= Level::Warn;
    let rows = guards
        .into_iter()
        .map(|g| {
            let evidence = g
                .evidence
                .iter()
                .map(|e| {
                    format!(
                        "{} = {}{}",
                        e.label,
                        crate::components::format_value(e.value),
                        if e.unit.is_empty() { String::new() } else { format!(" {}", e.unit) }
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            view! {
                <li class=class(g.level)>
                    <code>{g.name.as_str()}</code> " " <span class="guard-level">{g.level.as_str()}</span> " " {g.text}
                    {(!evidence.is_empty()).then(|| view! { <div class="muted guard-evidence">{evidence}</div> })}
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="guards" open=open>
            <summary><span class=class(worst)>{said}</span></summary>
            <ul class="guards-list">{rows}</ul>
        </details>
    }
    .into_any()
}
