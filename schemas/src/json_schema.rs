//! JSON Schema 2020-12 files generated from the types: the contract for readers that
//! are not this crate. `schemas/json/` holds them checked in; a test fails when they
//! drift from the types (`UPDATE_SCHEMAS=1 cargo test -p schemas` rewrites them).

use schemars::{schema_for, Schema};

/// File name → schema, for every published schema.
pub fn all() -> Vec<(&'static str, Schema)> {
    vec![
        (
            "statement.schema.json",
            with_id(schema_for!(crate::document::Statement), "statement"),
        ),
        (
            "envelope.schema.json",
            with_id(schema_for!(crate::dsse::Envelope), "envelope"),
        ),
        (
            "cli-output.schema.json",
            with_id(schema_for!(crate::outcome::Outcome), "cli-output"),
        ),
        (
            "trusted-keys.schema.json",
            with_id(schema_for!(crate::keys::TrustedKeysFile), "trusted-keys"),
        ),
    ]
}

fn with_id(mut schema: Schema, name: &str) -> Schema {
    schema.insert(
        "$id".into(),
        format!("{}/{name}.schema.json", crate::PREDICATE_TYPE).into(),
    );
    schema
}

/// The text written for a schema: pretty JSON and a final newline.
pub fn render(schema: &Schema) -> String {
    let mut text = serde_json::to_string_pretty(schema).expect("schemas serialise");
    text.push('\n');
    text
}
