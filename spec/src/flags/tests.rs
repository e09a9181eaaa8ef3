//! Every spec field has its flag, every flag its field, and the reference
//! (docs/reference/spec.md) lists them all.

use super::super::{DataSpec, Grid, Ramp, SessionSpec, StageSpec};
use super::*;
use serde::de::{self, DeserializeOwned, Visitor};

/// The field names serde reads for `T`: a deserializer that records what it is asked for.
fn serde_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Ask<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Ask<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("asked"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Ask(&mut fields));
    assert!(!fields.is_empty());
    fields
}

/// Spec fields whose flags are named apart from the field, as `table.field` → flag id.
const NAMED_APART: &[(&str, &str)] = &[
    ("data", "data"),
    ("dataset.path", "data"),
    ("dataset.format", "data_format"),
    ("dataset.output_tokens", "data_output_tokens"),
    ("grid", "grid"),
    ("trace.path", "trace"),
    ("trace.format", "trace_format"),
    ("trace.speedup", "trace_speedup"),
    ("engine.recipe", "engine"),
    ("engine.port", "engine_port"),
    ("engine.gpus", "engine_gpus"),
    ("engine.model_path", "engine_model"),
    ("engine.args", "engine_arg"),
    ("engine.container", "engine_container"),
    ("engine.image", "engine_image"),
    ("engine.speculative_method", "speculative_method"),
    ("engine.speculative_model", "speculative_model"),
    ("engine.num_speculative_tokens", "num_speculative_tokens"),
    ("engine.lora_modules", "lora_module"),
    ("engine.max_loras", "max_loras"),
];

/// Fields a spec file sets and no flag does, and why.
const FILE_ONLY: &[&str] = &[
    // A map: the shell that starts the runner already sets the engine's environment.
    "engine.env",
];

/// Every spec field, tables expanded into `table.field`.
fn spec_fields() -> Vec<String> {
    let mut out = vec![];
    for f in serde_fields::<RunSpec>() {
        let nested = match *f {
            "dataset" => serde_fields::<DatasetSpec>(),
            "trace" => serde_fields::<TraceSpec>(),
            "engine" => serde_fields::<EngineSpec>(),
            _ => &[],
        };
        if nested.is_empty() {
            out.push(f.to_string());
        }
        out.extend(nested.iter().map(|n| format!("{f}.{n}")));
    }
    out
}

fn command() -> Command {
    SpecFlags::augment_args(Command::new("run"))
}

#[test]
fn every_spec_field_has_a_flag_and_every_flag_a_field() {
    let cmd = command();
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let mut claimed = vec![];
    for field in spec_fields() {
        if FILE_ONLY.contains(&field.as_str()) {
            continue;
        }
        let id = NAMED_APART
            .iter()
            .find(|(f, _)| *f == field)
            .map_or(field.as_str(), |(_, id)| id);
        assert!(
            ids.iter().any(|i| i == id),
            "spec field `{field}` has no flag (expected an argument with id {id:?})"
        );
        claimed.push(id.to_string());
    }
    for id in &ids {
        assert!(claimed.contains(id), "flag {id:?} sets no spec field");
    }
}

#[test]
fn the_reference_lists_every_spec_field() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
            .join("../docs/reference/spec.md"),
    )
    .expect("docs/reference/spec.md beside the workspace");
    let start = readme
        .find("\nFields: ")
        .expect("the reference's spec field list");
    let end = start + readme[start..].find("Unknown fields are errors").unwrap();
    let listed = &readme[start..end];
    let tables: &[(&str, &[&str])] = &[
        ("data", serde_fields::<DataSpec>()),
        ("dataset", serde_fields::<DatasetSpec>()),
        ("grid", serde_fields::<Grid>()),
        ("sessions", serde_fields::<SessionSpec>()),
        ("trace", serde_fields::<TraceSpec>()),
        ("ramp", serde_fields::<Ramp>()),
        ("stages", serde_fields::<StageSpec>()),
        ("engine", serde_fields::<EngineSpec>()),
    ];
    for field in serde_fields::<RunSpec>() {
        let names = [
            format!("`{field}`"),
            format!("`[{field}]`"),
            format!("`[[{field}]]`"),
        ];
        assert!(
            names.iter().any(|n| listed.contains(n.as_str())),
            "docs/reference/spec.md's field list lacks `{field}`"
        );
        let Some((_, inner)) = tables.iter().find(|(t, _)| t == field) else {
            continue;
        };
        // A table's fields follow it in parentheses.
        let at = listed.find(&format!("[{field}]")).unwrap();
        let close = at + listed[at..].find(')').unwrap_or(0);
        for name in *inner {
            assert!(
                listed[at..close].contains(&format!("`{name}`")),
                "docs/reference/spec.md's field list lacks `{name}` after `[{field}]`"
            );
        }
    }
}

fn resolve(args: &[&str], file: Option<&Path>) -> Result<RunSpec> {
    let m = command()
        .try_get_matches_from(std::iter::once("run").chain(args.iter().copied()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    SpecFlags::from_arg_matches(&m)?.resolve(file)
}

#[test]
fn flags_replace_what_they_name_and_leave_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spec.toml");
    std::fs::write(
        &file,
        "ignore_eos = false\nseed = 9\nrequest_timeout_s = 5.0\n\
         [engine]\nrecipe = \"vllm\"\nargs = [\"--a\"]\ngpus = 2\n",
    )
    .unwrap();
    let s = resolve(&["--max-requests", "3"], Some(&file)).unwrap();
    assert!(
        !s.ignore_eos,
        "a flag left out must not restore the default"
    );
    assert_eq!(
        (s.seed, s.request_timeout_s, s.max_requests),
        (9, 5.0, Some(3))
    );
    let s = resolve(
        &[
            "--seed",
            "1",
            "--request-timeout",
            "7",
            "--engine-arg=--b",
            "--engine-port",
            "9",
        ],
        Some(&file),
    )
    .unwrap();
    assert_eq!((s.seed, s.request_timeout_s), (1, 7.0));
    let e = s.engine.unwrap();
    assert_eq!(
        (e.recipe.as_str(), e.gpus, e.port),
        ("vllm", Some(2), Some(9))
    );
    assert_eq!(e.args, ["--a", "--b"]);

    let s = resolve(
        &["--allow-eos", "--rate", "1,2", "--stages", "2:30,8:60"],
        None,
    )
    .unwrap();
    assert!(!s.ignore_eos);
    assert_eq!(s.rate, [1.0, 2.0]);
    assert_eq!(s.stages.len(), 2);
    assert_eq!(s.profile, ProfileName::Staged, "stages imply their profile");
    let s = resolve(
        &[
            "--grid",
            "input=1,2",
            "output=3",
            "--data",
            "prompt_tokens=9",
        ],
        None,
    )
    .unwrap();
    assert_eq!(s.grid.unwrap().input, [1, 2]);
    assert_eq!(s.data.prompt_tokens, 9);
    let s = resolve(&["--data", "p.jsonl", "--data-format", "sharegpt"], None).unwrap();
    assert_eq!(s.dataset.unwrap().path, "p.jsonl");
    let s = resolve(&["--trace", "t.jsonl", "--trace-speedup", "2"], None).unwrap();
    assert_eq!(
        (s.profile, s.trace.unwrap().speedup),
        (ProfileName::Trace, 2.0)
    );

    for (args, says) in [
        (&["--engine-port", "1"][..], "need --engine RECIPE"),
        (&["--data-format", "jsonl"][..], "need --data FILE"),
        (&["--trace-speedup", "2"][..], "need --trace FILE"),
        (&["--grid", "inputs=1", "output=2"][..], "unknown key"),
    ] {
        let e = resolve(args, None).unwrap_err().to_string();
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

/// `--extra-body` and a file's `[extra_body]` table: an object merged into every request,
/// stored with the spec; what provebench sets itself is refused, naming the field's path and
/// the flag that sets it.
#[test]
fn an_extra_body_is_an_object_of_the_servers_own_fields() {
    let s = resolve(
        &[
            "--max-requests",
            "1",
            "--extra-body",
            r#"{"chat_template_kwargs": {"enable_thinking": false}, "top_p": 0.9}"#,
        ],
        None,
    )
    .unwrap();
    let body = s.extra_body.as_ref().unwrap();
    assert_eq!(
        serde_json::Value::Object(body.clone()),
        serde_json::json!({"chat_template_kwargs": {"enable_thinking": false}, "top_p": 0.9})
    );
    s.validate().unwrap();
    // Stored with the spec and read back as it was.
    let back: RunSpec = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
    assert_eq!(back.extra_body, s.extra_body);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spec.toml");
    std::fs::write(
        &file,
        "[extra_body]\nchat_template_kwargs = { enable_thinking = false }\n",
    )
    .unwrap();
    let s = resolve(&[], Some(&file)).unwrap();
    assert_eq!(
        s.extra_body.unwrap()["chat_template_kwargs"]["enable_thinking"],
        false
    );
    // A file's table is checked with the rest of the spec.
    std::fs::write(&file, "[extra_body]\nn = 8\n").unwrap();
    let s = resolve(&["--max-requests", "1"], Some(&file)).unwrap();
    let e = format!("{:#}", s.validate().unwrap_err());
    assert!(e.contains("--extra-body: n is provebench's to set"), "{e}");

    for (body, says) in [
        (
            r#"{"stream": false}"#,
            "stream is provebench's to set (every request streams",
        ),
        (
            r#"{"max_tokens": 5}"#,
            "max_tokens is provebench's to set (--data output_tokens",
        ),
        (
            r#"{"parameters": {"max_new_tokens": 5}}"#,
            "parameters.max_new_tokens is provebench's to set",
        ),
        (
            r#"{"sampling_params": {"temperature": 1}}"#,
            "sampling_params.temperature is provebench's to set (--temperature",
        ),
        ("[1, 2]", "--extra-body: a JSON object, not [1,2]"),
        ("{top_p: 1}", "--extra-body: not JSON"),
    ] {
        let e = format!("{:#}", resolve(&["--extra-body", body], None).unwrap_err());
        assert!(e.contains(says), "{body}: {e}");
    }
}
