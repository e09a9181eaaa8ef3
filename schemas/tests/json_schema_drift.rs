//! The checked-in JSON Schema files must be exactly what the types generate.

#![cfg(feature = "json-schema")]

use std::path::PathBuf;

#[test]
fn checked_in_schemas_match_the_types() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("json");
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut drifted = vec![];
    for (name, schema) in schemas::json_schema::all() {
        let path = dir.join(name);
        let fresh = schemas::json_schema::render(&schema);
        if update {
            std::fs::write(&path, &fresh).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(fresh.as_str()) {
            drifted.push(path.display().to_string());
        }
    }
    assert!(
        drifted.is_empty(),
        "schema files drifted from the types: {drifted:?}; rerun with UPDATE_SCHEMAS=1"
    );
}
