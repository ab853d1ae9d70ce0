//! Links the page follows in place: a step's editor opened and closed (the
//! server renders it for `?edit=`; without JavaScript the link loads that
//! page), and a mention marked read before it is opened.

use super::dom;
use web_sys::Event;

pub fn install() {
    dom::listen(&dom::document(), "click", false, |event: Event| {
        if !dom::plain_click(&event) {
            return;
        }
        if let Some(link) = dom::closest(&event, ".step a[data-view]") {
            event.prevent_default();
            toggle_editor(&link);
        } else if let Some(link) = dom::closest(&event, "a[data-mention]") {
            event.prevent_default();
            open_mention(&link);
        }
    });
}

/// Opens or closes the editor of the link's step, keeping the page's place.
fn toggle_editor(link: &web_sys::Element) {
    let Ok(Some(step)) = link.closest(".step") else { return };
    let opening = link.get_attribute("data-view").as_deref() == Some("edit");
    let id = step.id();
    super::page::set_edit(opening.then(|| id.trim_start_matches("step-").to_string()));
    super::page::refresh_then(move || {
        if opening
            && let Some(field) =
                dom::find(&format!("#{id} .step-body textarea, #{id} .step-body input:not([type=hidden])"))
            && let Some(field) = wasm_bindgen::JsCast::dyn_ref::<web_sys::HtmlElement>(&field)
        {
            let _ = field.focus();
        }
    });
}

fn open_mention(link: &web_sys::Element) {
    let (Some(anchor), Some(href)) = (link.get_attribute("data-mention"), link.get_attribute("href")) else {
        return;
    };
    wasm_bindgen_futures::spawn_local(async move {
        // Unread it stays if this fails; the link is followed either way.
        let _ = crate::pages::comments::read_mentions(Some(anchor)).await;
        let _ = dom::window().location().assign(&href);
    });
}
