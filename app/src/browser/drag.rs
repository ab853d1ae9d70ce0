//! Steps moved by dragging their handle (`⠿`) onto another step: dropped on
//! its upper half the step goes before it, on its lower half after it. The
//! move is the same server function the ↑/↓ buttons post (kept for keyboards
//! and for pages without JavaScript); the page is drawn anew when it is done.

use super::dom;
use std::cell::Cell;
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, Element, Event};

thread_local! {
    /// The step being dragged (its id and position).
    static DRAGGED: Cell<Option<(i64, u32)>> = const { Cell::new(None) };
}

pub fn install() {
    let document = dom::document();
    dom::listen(&document, "dragstart", false, |event: Event| {
        let Some(handle) = dom::closest(&event, ".step .drag-handle") else { return };
        let Ok(Some(step)) = handle.closest(".step") else { return };
        let (Some(id), Some(position)) = (dom::number(&step, "data-step"), dom::number(&step, "data-position")) else {
            return;
        };
        DRAGGED.with(|d| d.set(Some((id, position))));
        let _ = step.class_list().add_1("dragging");
        if let Some(transfer) = event.dyn_ref::<DragEvent>().and_then(DragEvent::data_transfer) {
            transfer.set_effect_allowed("move");
            // Some browsers start a drag only with data in it.
            let _ = transfer.set_data("text/plain", &step.id());
        }
    });
    dom::listen(&document, "dragover", false, |event: Event| {
        if DRAGGED.with(Cell::get).is_none() {
            return;
        }
        let Some(target) = dom::closest(&event, "ol.steps > li.step") else { return };
        event.prevent_default();
        clear_marks();
        let _ = target.class_list().add_1(if lower_half(&event, &target) { "drop-after" } else { "drop-before" });
    });
    dom::listen(&document, "dragend", false, |_| {
        DRAGGED.with(|d| d.set(None));
        clear_marks();
    });
    dom::listen(&document, "drop", false, |event: Event| {
        let Some((id, from)) = DRAGGED.with(|d| d.take()) else { return };
        clear_marks();
        let Some(target) = dom::closest(&event, "ol.steps > li.step") else { return };
        event.prevent_default();
        let Some(over) = dom::number::<u32>(&target, "data-position") else { return };
        let to = domain::model::drop_position(from, over, lower_half(&event, &target));
        if to == from {
            return;
        }
        // The move form's address (any step's: they post to the same function).
        let Some(action) = dom::find("form[action*='move_step']").and_then(|f| f.get_attribute("action")) else {
            return;
        };
        wasm_bindgen_futures::spawn_local(async move {
            let _ = super::forms::send_now(action, format!("step_id={id}&position={to}")).await;
        });
    });
}

fn lower_half(event: &Event, target: &Element) -> bool {
    let Some(y) = event.dyn_ref::<DragEvent>().map(|e| f64::from(e.client_y())) else { return false };
    let rect = target.get_bounding_client_rect();
    y > rect.top() + rect.height() / 2.0
}

fn clear_marks() {
    let Some(root) = dom::document().document_element() else { return };
    for marked in dom::all(&root, ".step.drop-before, .step.drop-after, .step.dragging") {
        let _ = marked.class_list().remove_3("drop-before", "drop-after", "dragging");
    }
}
