//! `sift config show` and `sift config schema` on the real binary: every layer shows through
//! with its source, bad values exit 1 naming the layer and key, and the schema is a valid JSON
//! Schema that the configuration reference (docs/configuration.md) matches key for key.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use sift_tests::{sift, stderr, stdout, write};

/// `sift config ARGS` with `xdg` as the user configuration folder.
fn config(xdg: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = sift();
    cmd.env("XDG_CONFIG_HOME", xdg).arg("config").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("sift runs")
}

fn json_of(out: &Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", stdout(out), stderr(out)))
}

#[test]
fn show_json_gives_every_value_with_the_layer_that_set_it() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (xdg, root) = (base.join("xdg"), base.join("repo"));
    write(
        &xdg,
        "sift/config.toml",
        "[embed]\nthreads = 2\nmodel = \"user\"\n[model]\nname = \"user-model\"\n",
    );
    write(
        &root,
        ".sift/config.toml",
        "[embed]\nmodel = \"repo\"\nbatch = 8\n[index]\nmax_file_size = \"2 MiB\"\n[future]\nk = 1\n",
    );
    let r = root.to_str().unwrap();
    let out = config(
        &xdg,
        &[
            "show",
            "--path",
            r,
            "--json",
            "--no-follow-symlinks",
            "--editor",
            r#"{"embed": {"device": "cuda"}, "review": {"on_save": false}, "siftTestHooks": true}"#,
        ],
        &[("SIFT_EMBED_MODEL", "env-model"), ("SIFT_THREADS", "3")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    let user = xdg.join("sift/config.toml").display().to_string();
    let repo = root.join(".sift/config.toml").display().to_string();
    assert_eq!(v["root"], json!(r));
    assert_eq!(
        v["files"],
        json!([
            { "layer": "user", "path": user, "found": true },
            { "layer": "repository", "path": repo, "found": true },
        ])
    );
    let at = |section: &str, key: &str| v["sections"][section][key].clone();
    let src = |layer: &str, extra: Value| {
        let mut s = json!({ "layer": layer });
        if let (Some(s), Some(extra)) = (s.as_object_mut(), extra.as_object()) {
            s.extend(extra.clone());
        }
        s
    };
    assert_eq!(
        at("embed", "threads"),
        json!({ "value": 2, "source": src("user", json!({ "path": user })) })
    );
    assert_eq!(
        at("embed", "batch"),
        json!({ "value": 8, "source": src("repository", json!({ "path": repo })) })
    );
    assert_eq!(
        at("embed", "device"),
        json!({ "value": "cuda", "source": src("editor", json!({})) })
    );
    assert_eq!(
        at("review", "on_save"),
        json!({ "value": false, "source": src("editor", json!({})) })
    );
    assert_eq!(
        at("embed", "model"),
        json!({ "value": "env-model", "source": src("environment", json!({ "variable": "SIFT_EMBED_MODEL" })) })
    );
    assert_eq!(
        at("index", "follow_symlinks"),
        json!({ "value": false, "source": src("flag", json!({ "flag": "--no-follow-symlinks" })) })
    );
    assert_eq!(at("index", "max_file_size")["value"], json!(2 << 20));
    assert_eq!(
        at("index", "threads")["source"],
        src("environment", json!({ "variable": "SIFT_THREADS" }))
    );
    assert_eq!(at("model", "name")["value"], json!("user-model"));
    assert_eq!(
        at("model", "context_window"),
        json!({ "value": 8192, "source": src("default", json!({})) })
    );
    assert_eq!(at("model", "api_key_env")["value"], Value::Null);
    assert_eq!(v["errors"], json!([]));
    assert_eq!(v["ignored"], json!([format!("repository config {repo}: [future]")]));

    // The human table says the same.
    let out = config(&xdg, &["show", "--path", r], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
            .to_owned()
    };
    assert!(line("batch ").ends_with(&format!("repository config {repo}")), "{text}");
    assert!(
        line("context_window ").contains("8192") && line("context_window ").ends_with("default")
    );
    assert!(
        text.contains("\n[model]\n") && text.contains(&format!("user config {user}\n")),
        "{text}"
    );
}

#[test]
fn show_exits_one_and_names_the_layer_and_key_of_a_bad_value() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(
        &root,
        ".sift/config.toml",
        "[index]\nmax_file_size = \"huge\"\n[model]\napi_key = \"sk-e2e-secret\"\n",
    );
    let r = root.to_str().unwrap();
    let xdg = root.join("xdg");
    let repo = root.join(".sift/config.toml").display().to_string();
    let out = config(&xdg, &["show", "--path", r, "--json"], &[("SIFT_EMBED_DEVICE", "tpu")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let errors = json_of(&out)["errors"].clone();
    assert_eq!(
        errors[0],
        json!(format!(
            "repository config {repo}: [index] max_file_size: \"huge\" is not a size (try \"1 MiB\")"
        ))
    );
    assert!(errors[1].as_str().unwrap().starts_with(&format!(
        "repository config {repo}: [model] api_key: sift never reads an API key"
    )));
    assert!(
        errors[2]
            .as_str()
            .unwrap()
            .starts_with("environment SIFT_EMBED_DEVICE: [embed] device: \"tpu\" is not a device")
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 3, "{err}");
    assert!(err.lines().all(|l| l.starts_with("error: ")), "{err}");
    assert!(!format!("{}{err}", stdout(&out)).contains("sk-e2e-secret"));

    let out = config(&xdg, &["show", "--path", r, "--editor", "[1]"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).trim(), "error: --editor: not a JSON object");

    write(&root, ".sift/config.toml", "[index]\nmax_file_size = 1\n\n[model\n");
    let out = config(&xdg, &["show", "--path", r], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).starts_with(&format!("error: {repo}:4:")), "{}", stderr(&out));
}

/// The schema's `table → keys`.
fn schema_keys(schema: &Value) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for (table, node) in schema["properties"].as_object().unwrap() {
        for key in node["properties"].as_object().unwrap().keys() {
            keys.insert(format!("[{table}] {key}"));
        }
    }
    keys
}

#[test]
fn schema_json_is_a_json_schema_of_every_key_files_and_editors_may_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = config(dir.path(), &["schema", "--json"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let schema = json_of(&out);
    assert!(jsonschema::meta::is_valid(&schema), "not a valid JSON Schema: {schema}");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let keys = schema_keys(&schema);
    for key in [
        "[index] max_file_size",
        "[embed] onnxruntime",
        "[model] api_key_env",
        "[model] backend",
        "[review] on_save",
    ] {
        assert!(keys.contains(key), "{key} is missing from {keys:?}");
    }
    // Environment-only knobs and secrets are not configuration-file keys.
    assert!(!keys.contains("[index] threads") && !keys.contains("[model] api_key"), "{keys:?}");
    for (table, node) in schema["properties"].as_object().unwrap() {
        for (key, prop) in node["properties"].as_object().unwrap() {
            assert!(prop["type"].is_string() || prop["type"].is_array(), "[{table}] {key}: {prop}");
            assert!(prop["description"].as_str().is_some_and(|d| !d.is_empty()), "[{table}] {key}");
        }
    }
    // What the schema accepts and refuses agrees with the loader.
    let good = json!({ "index": { "max_file_size": "2 MiB" }, "model": { "backend": "openai", "max_attempts": 3 }, "other": {} });
    assert!(validator.is_valid(&good));
    for bad in [
        json!({ "index": { "max_file_sise": 1 } }),
        json!({ "model": { "backend": "llama" } }),
        json!({ "model": { "api_key": "sk" } }),
        json!({ "embed": { "batch": -1 } }),
        json!({ "review": { "on_save": "yes" } }),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
    // Every key `show` lists that files may set is in the schema, and nothing else.
    let shown = json_of(&config(
        dir.path(),
        &["show", "--json", "--path", dir.path().to_str().unwrap()],
        &[],
    ));
    let mut from_show = BTreeSet::new();
    for (table, node) in shown["sections"].as_object().unwrap() {
        for key in node.as_object().unwrap().keys() {
            from_show.insert(format!("[{table}] {key}"));
        }
    }
    let env_only: BTreeSet<String> = from_show.difference(&keys).cloned().collect();
    assert_eq!(
        env_only,
        BTreeSet::from(["[index] commit_interval_ms".into(), "[index] threads".into()])
    );
    assert!(keys.is_subset(&from_show));

    // Without --json: a reference for people, with the variables.
    let text = stdout(&config(dir.path(), &["schema"], &[]));
    assert!(
        text.contains("[model]")
            && text.contains("SIFT_MODEL_BASE_URL")
            && text.contains("SIFT_THREADS only"),
        "{text}"
    );
}

#[test]
fn the_readme_reference_lists_exactly_the_schema_keys_and_validates() {
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md"),
    )
    .unwrap();
    let heading = readme
        .find("## `.sift/config.toml`: every key")
        .expect("the configuration reference of docs/configuration.md");
    let block = &readme[heading..];
    let start = block.find("```toml\n").expect("a ```toml block") + "```toml\n".len();
    let end = start + block[start..].find("```").unwrap();
    let table: toml::Table = block[start..end].parse().expect("the reference is TOML");
    let mut documented = BTreeSet::new();
    for (name, keys) in &table {
        for key in keys.as_table().unwrap().keys() {
            documented.insert(format!("[{name}] {key}"));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let schema = json_of(&config(dir.path(), &["schema", "--json"], &[]));
    assert_eq!(
        documented,
        schema_keys(&schema),
        "docs/configuration.md's reference and `sift config schema`"
    );
    // The reference's values (empty strings aside: they document "unset") are valid ones.
    let mut example = serde_json::to_value(&table).unwrap();
    for keys in example.as_object_mut().unwrap().values_mut() {
        keys.as_object_mut().unwrap().retain(|_, v| v != "");
    }
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&example).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// The first column's names of the Markdown table after `heading` in `doc`.
fn table_names(doc: &str, heading: &str) -> BTreeSet<String> {
    let at = doc.find(heading).unwrap_or_else(|| panic!("{heading} in docs/configuration.md"));
    doc[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|l| l.split('|').nth(1))
        .map(|cell| cell.trim().trim_matches('`').to_string())
        .collect()
}

#[test]
fn the_environment_tables_list_every_variable_sift_reads() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md"),
    )
    .unwrap();
    // The configuration's own variables: one per key that has one, files' keys and
    // environment-only ones alike.
    let keys: BTreeSet<String> = sift_engine::config::SECTIONS
        .iter()
        .flat_map(|s| s.keys.iter())
        .filter_map(|k| k.env.map(str::to_string))
        .collect();
    assert!(keys.contains("SIFT_THREADS") && keys.contains("SIFT_MODEL_NAME"), "{keys:?}");
    assert_eq!(table_names(&doc, "### Variables that set a configuration key"), keys);
    // Every other variable: the one table the code reads through.
    let others: BTreeSet<String> = sift_env::VARS.iter().map(|v| v.name.to_string()).collect();
    assert_eq!(table_names(&doc, "### Other variables"), others);
    assert!(keys.is_disjoint(&others), "{:?}", keys.intersection(&others).collect::<Vec<_>>());
}
