//! A run's output on the page: "show more" (or scrolling to its top) adds the
//! 64 KB before what is shown, and a source reference in it
//! (`[custom_all_reduce.py:137]`) opens as a snippet step in one click when its
//! file is unambiguous; otherwise its link's page offers the choice.

use super::dom;
use web_sys::{Element, Event};

pub fn install() {
    let document = dom::document();
    dom::listen(&document, "click", false, |event: Event| {
        if !dom::plain_click(&event) {
            return;
        }
        // A share link's reader has no session for the server functions: the
        // links there are plain links to the link's own routes.
        if dom::closest(&event, ".shared-page").is_some() {
            return;
        }
        if let Some(link) = dom::closest(&event, ".run a.load-earlier") {
            event.prevent_default();
            if let Ok(Some(run)) = link.closest(".run") {
                load_earlier(run);
            }
        } else if let Some(link) = dom::closest(&event, ".run pre.output a.src-ref") {
            event.prevent_default();
            open_reference(link);
        }
    });
    // Scrolling to the top of an output box asks for what is above.
    dom::listen(&document, "scroll", true, |event: Event| {
        let Some(output) = dom::closest(&event, "pre.output:not(.server-output)") else { return };
        if output.closest(".shared-page").ok().flatten().is_some() {
            return;
        }
        if output.scroll_top() <= 0
            && let Ok(Some(run)) = output.closest(".run")
        {
            load_earlier(run);
        }
    });
}

fn load_earlier(run: Element) {
    let (Some(id), Some(first)) = (dom::number::<i64>(&run, "data-run"), dom::number::<u64>(&run, "data-first")) else {
        return;
    };
    if first == 0 || run.has_attribute("data-loading") {
        return;
    }
    let _ = run.set_attribute("data-loading", "");
    wasm_bindgen_futures::spawn_local(async move {
        let answer = crate::steps::command::earlier_output(id, first).await;
        let _ = run.remove_attribute("data-loading");
        // Drawn anew meanwhile: the new output box starts elsewhere.
        if !run.is_connected() || dom::number::<u64>(&run, "data-first") != Some(first) {
            return;
        }
        let part = match answer {
            Ok(part) => part,
            Err(e) => return note(&run, &e.message),
        };
        if let Ok(Some(earlier)) = run.query_selector("code.earlier-output") {
            let _ = earlier.insert_adjacent_html("afterbegin", &part.html);
        }
        let _ = run.set_attribute("data-first", &part.start.to_string());
        let Ok(Some(line)) = run.query_selector("p.earlier") else { return };
        if part.start == 0 {
            line.remove();
            return;
        }
        if let Ok(Some(bytes)) = line.query_selector(".earlier-bytes") {
            bytes.set_text_content(Some(&domain::runs::human_bytes(part.start)));
        }
        if let Ok(Some(link)) = line.query_selector("a.load-earlier") {
            let from = part.start.saturating_sub(crate::steps::command::EARLIER_BYTES);
            let href = format!("/api/v1/runs/{id}/output?offset={from}&limit={}", part.start - from);
            let _ = link.set_attribute("href", &href);
        }
    });
}

fn open_reference(link: Element) {
    let Ok(Some(run)) = link.closest(".run") else { return };
    let (Some(id), Some(file), Some(line)) =
        (dom::number::<i64>(&run, "data-run"), link.get_attribute("data-file"), dom::number::<u64>(&link, "data-line"))
    else {
        return;
    };
    note(&run, "Finding the file on the host…");
    wasm_bindgen_futures::spawn_local(async move {
        match crate::pages::source::open_reference(id, file, line, String::new()).await {
            Ok(url) => super::page::go_to(&url),
            Err(e) => note(&run, &e.message),
        }
    });
}

/// A line under the run's head: what is happening, or what went wrong.
fn note(run: &Element, text: &str) {
    let existing = run.query_selector(":scope > p.run-note").ok().flatten();
    let Some(p) = existing.or_else(|| {
        let p = dom::document().create_element("p").ok()?;
        let _ = p.set_attribute("class", "muted run-note");
        let _ = p.set_attribute("role", "status");
        let head = run.query_selector(".run-head").ok().flatten()?;
        head.after_with_node_1(&p).ok()?;
        Some(p)
    }) else {
        return;
    };
    p.set_text_content(Some(text));
}
