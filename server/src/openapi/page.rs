//! The document as a page to read (`/api/v1/openapi.html`): the operations by
//! resource, each with its parameters, body and answers, and every schema
//! with its fields. Written from the document, so it says what the JSON says;
//! every string in it is escaped.

use domain::html::escape_text as e;
use serde_json::Value;
use std::fmt::Write;

pub fn render(document: &Value) -> String {
    let mut html = String::from(HEAD);
    let title = document["info"]["title"].as_str().unwrap_or("API");
    let version = document["info"]["version"].as_str().unwrap_or("");
    let _ = write!(
        html,
        "<h1>{} API <small>{}</small></h1><p>{}</p><p>The same as JSON: \
         <a href=\"/api/v1/openapi.json\">/api/v1/openapi.json</a> (OpenAPI {}). Examples: docs/api.md.</p>",
        e(title),
        e(version),
        e(document["info"]["description"].as_str().unwrap_or("")),
        e(document["openapi"].as_str().unwrap_or(""))
    );
    let empty = serde_json::Map::new();
    let paths = document["paths"].as_object().unwrap_or(&empty);
    let mut tags: Vec<&str> = paths
        .values()
        .filter_map(|item| item.as_object())
        .flat_map(|item| item.values())
        .filter_map(|op| op["tags"][0].as_str())
        .collect();
    tags.sort_unstable();
    tags.dedup();
    html.push_str("<nav><b>Resources:</b> ");
    for tag in &tags {
        let _ = write!(html, "<a href=\"#tag-{0}\">{0}</a> ", e(tag));
    }
    html.push_str("<a href=\"#schemas\">schemas</a></nav>");
    for tag in &tags {
        let _ = write!(html, "<h2 id=\"tag-{0}\">{0}</h2>", e(tag));
        for (path, item) in paths {
            for (method, op) in item.as_object().unwrap_or(&empty) {
                if op["tags"][0].as_str() == Some(tag) {
                    operation(&mut html, method, path, op);
                }
            }
        }
    }
    html.push_str("<h2 id=\"schemas\">Schemas</h2>");
    for (name, schema) in document["components"]["schemas"].as_object().unwrap_or(&empty) {
        let _ = write!(html, "<section id=\"schema-{0}\"><h3>{0}</h3>", e(name));
        fields(&mut html, schema);
        html.push_str("</section>");
    }
    html.push_str("</main></body></html>");
    html
}

fn operation(html: &mut String, method: &str, path: &str, op: &Value) {
    let id = op["operationId"].as_str().unwrap_or_default();
    let _ = write!(
        html,
        "<section class=\"op\" id=\"{}\"><h3><span class=\"method {}\">{}</span> <code>{}</code>{}</h3>",
        e(id),
        e(method),
        e(&method.to_uppercase()),
        e(path),
        if op["security"].as_array().is_some_and(|s| !s.is_empty()) { "" } else { " <small>no sign-in</small>" }
    );
    if let Some(text) = op["description"].as_str() {
        let _ = write!(html, "<p>{}</p>", e(text));
    }
    let parameters = op["parameters"].as_array().map(Vec::as_slice).unwrap_or_default();
    if !parameters.is_empty() {
        html.push_str("<table><tr><th>parameter</th><th>in</th><th>type</th><th></th></tr>");
        for p in parameters {
            let _ = write!(
                html,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                e(p["name"].as_str().unwrap_or("")),
                e(p["in"].as_str().unwrap_or("")),
                type_of(&p["schema"]),
                if p["required"] == true { "required" } else { "" }
            );
        }
        html.push_str("</table>");
    }
    if let Some(content) = op["requestBody"]["content"].as_object() {
        let required = if op["requestBody"]["required"] == true { "" } else { " (may be left out)" };
        let _ = write!(html, "<p>Body{required}: {}</p>", media(content));
    }
    html.push_str("<ul class=\"answers\">");
    for (code, response) in op["responses"].as_object().into_iter().flatten() {
        let content = response["content"].as_object().map(media).unwrap_or_default();
        let _ = write!(html, "<li><b>{}</b> {}", e(code), content);
        if code == "default" {
            html.push_str(" — an error");
        }
        html.push_str("</li>");
    }
    html.push_str("</ul></section>");
}

/// `application/json: Investigation`, `text/plain`.
fn media(content: &serde_json::Map<String, Value>) -> String {
    content
        .iter()
        .map(|(kind, media)| match media.get("schema") {
            Some(schema) => format!("<code>{}</code> {}", e(kind), type_of(schema)),
            None => format!("<code>{}</code>", e(kind)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn fields(html: &mut String, schema: &Value) {
    if let Some(text) = schema["description"].as_str() {
        let _ = write!(html, "<p>{}</p>", e(text));
    }
    let Some(properties) = schema["properties"].as_object() else {
        let _ = write!(html, "<p>{}</p>", type_of(schema));
        return;
    };
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    html.push_str("<table><tr><th>field</th><th>type</th><th></th><th></th></tr>");
    for (name, property) in properties {
        let _ = write!(
            html,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            e(name),
            type_of(property),
            if required.contains(&name.as_str()) { "required" } else { "" },
            e(property["description"].as_str().unwrap_or(""))
        );
    }
    html.push_str("</table>");
}

/// A schema in a few words: a link for a named one, `array of X`, `A | B`.
fn type_of(schema: &Value) -> String {
    if let Some(name) = schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
        return format!("<a href=\"#schema-{0}\">{0}</a>", e(name));
    }
    for either in ["anyOf", "oneOf"] {
        if let Some(options) = schema[either].as_array() {
            return options.iter().map(type_of).collect::<Vec<_>>().join(" | ");
        }
    }
    if let Some(values) = schema["enum"].as_array() {
        return values.iter().map(|v| format!("<code>{}</code>", e(&v.to_string()))).collect::<Vec<_>>().join(" | ");
    }
    if let Some(value) = schema.get("const") {
        return format!("<code>{}</code>", e(&value.to_string()));
    }
    let types: Vec<String> = match &schema["type"] {
        Value::String(t) => vec![t.clone()],
        Value::Array(ts) => ts.iter().filter_map(|t| t.as_str().map(str::to_string)).collect(),
        _ => return "any".into(),
    };
    types
        .iter()
        .map(|t| match t.as_str() {
            "array" if schema.get("prefixItems").is_some() => {
                let items = schema["prefixItems"].as_array().into_iter().flatten().map(type_of);
                format!("[{}]", items.collect::<Vec<_>>().join(", "))
            }
            "array" => format!("array of {}", type_of(&schema["items"])),
            "object" if schema.get("additionalProperties").is_some_and(Value::is_object) => {
                format!("map to {}", type_of(&schema["additionalProperties"]))
            }
            other => e(other),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

const HEAD: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Sleuth API</title>\
<link rel=\"stylesheet\" href=\"/pkg/sleuth.css\"><style>\
main.api{max-width:60rem;margin:0 auto;padding:1rem}main.api nav a{margin-right:.5rem}\
.op{border-top:1px solid color-mix(in srgb,currentColor 20%,transparent);padding:.5rem 0}\
.method{display:inline-block;min-width:4.5rem;font-family:monospace;text-transform:uppercase}\
.method.get{color:#2b7}.method.post{color:#27c}.method.patch,.method.put{color:#c82}.method.delete{color:#c33}\
main.api table{border-collapse:collapse;margin:.25rem 0}main.api td,main.api th{padding:.1rem .6rem;text-align:left}\
</style></head><body><main class=\"api\"><p><a href=\"/\">← Sleuth</a></p>";

#[cfg(test)]
mod tests {
    #[test]
    fn every_string_of_the_document_is_escaped() {
        let hostile = "<script>alert(1)</script>";
        let document = serde_json::json!({
            "openapi": "3.1.0",
            "info": {"title": hostile, "version": hostile, "description": hostile},
            "paths": {"/x/{id}": {"get": {
                "operationId": hostile, "tags": [hostile], "description": hostile,
                "parameters": [{"name": hostile, "in": "path", "required": true, "schema": {"type": hostile}}],
                "responses": {"200": {"content": {hostile: {"schema": {"$ref": format!("#/components/schemas/{hostile}")}}}}}
            }}},
            "components": {"schemas": {hostile: {"description": hostile, "properties": {hostile: {"enum": [hostile]}}}}}
        });
        let page = super::render(&document);
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }

    #[test]
    fn types_read_as_words() {
        let t = |v: serde_json::Value| super::type_of(&v);
        assert_eq!(t(serde_json::json!({"type": ["string", "null"]})), "string | null");
        assert_eq!(
            t(serde_json::json!({"type": "array", "items": {"$ref": "#/components/schemas/Run"}})),
            "array of <a href=\"#schema-Run\">Run</a>"
        );
        assert_eq!(
            t(serde_json::json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}]})),
            "[string, string]"
        );
    }
}
