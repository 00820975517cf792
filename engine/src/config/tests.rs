//! The layering: a value from each layer, precedence, sources, and messages that name the layer
//! and the key. Every test builds its own user folder, repository and environment map; none
//! reads the process environment.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use sift_indexer::IndexConfig;
use sift_runtime::embed::{DEFAULT_MODEL, DEFAULT_UPGRADE, Device, EmbedConfig};
use sift_runtime::llm::config::{Backend, ModelConfig};

use super::*;

/// A user configuration folder, a repository, an environment, editor settings and flags.
struct Fixture {
    _dir: tempfile::TempDir,
    xdg: PathBuf,
    root: PathBuf,
    env: HashMap<String, String>,
    editor: Option<serde_json::Value>,
    flags: Vec<Flag>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (xdg, root) = (base.join("xdg"), base.join("repo"));
        std::fs::create_dir_all(&root).unwrap();
        let env = HashMap::from([("XDG_CONFIG_HOME".to_owned(), xdg.display().to_string())]);
        Fixture { _dir: dir, xdg, root, env, editor: None, flags: Vec::new() }
    }

    fn user_file(&self) -> PathBuf {
        self.xdg.join("sift/config.toml")
    }

    fn repo_file(&self) -> PathBuf {
        self.root.join(".sift/config.toml")
    }

    fn user(self, text: &str) -> Fixture {
        std::fs::create_dir_all(self.xdg.join("sift")).unwrap();
        std::fs::write(self.user_file(), text).unwrap();
        self
    }

    fn repo(self, text: &str) -> Fixture {
        std::fs::create_dir_all(self.root.join(".sift")).unwrap();
        std::fs::write(self.repo_file(), text).unwrap();
        self
    }

    fn env(mut self, var: &str, value: &str) -> Fixture {
        self.env.insert(var.into(), value.into());
        self
    }

    fn editor(mut self, settings: serde_json::Value) -> Fixture {
        self.editor = Some(settings);
        self
    }

    fn flag(
        mut self,
        section: &'static str,
        key: &'static str,
        flag: &'static str,
        value: toml::Value,
    ) -> Fixture {
        self.flags.push(Flag { section, key, flag, value });
        self
    }

    fn try_load(&self) -> Result<Config, ConfigError> {
        let env = |name: &str| self.env.get(name).cloned();
        Config::load(&Inputs {
            root: Some(&self.root),
            editor: self.editor.as_ref(),
            flags: &self.flags,
            env: &env,
            repo_file: None,
        })
    }

    fn load(&self) -> Config {
        self.try_load().unwrap()
    }

    /// The first error's message.
    fn error(&self) -> String {
        let config = self.load();
        match config.errors().first() {
            Some(e) => e.to_string(),
            None => panic!("no error in {:?}", config.to_json()),
        }
    }
}

fn text(t: &str) -> Option<Value> {
    Some(Value::Text(t.into()))
}

#[test]
fn nothing_configured_gives_every_section_its_default() {
    let config = Fixture::new().load();
    assert_eq!(config.index().unwrap(), IndexConfig::default());
    assert_eq!(
        config.embed().unwrap(),
        EmbedConfig { model: Some(DEFAULT_MODEL.into()), ..EmbedConfig::default() }
    );
    assert_eq!(config.model().unwrap(), ModelConfig::default());
    assert_eq!(config.review().unwrap(), ReviewSettings::default());
    let opts = config.update_options(Duration::from_millis(750)).unwrap();
    assert_eq!(opts.threads, sift_indexer::UpdateOptions::default().threads);
    assert_eq!(opts.commit_interval, Duration::from_millis(750));
    assert!(config.entries().all(|(_, _, s)| s.source == Source::Default));
    assert!(config.errors().is_empty() && config.ignored().is_empty());
    let files: Vec<bool> = config.files().iter().map(|f| f.found).collect();
    assert_eq!(files, [false, false]);
}

#[test]
fn the_embedding_upgrade_defaults_to_the_transformer_and_none_turns_it_off() {
    let embed = Fixture::new().load().embed().unwrap();
    assert_eq!(embed.upgrade.as_deref(), Some(DEFAULT_UPGRADE));
    let up = embed.upgrade_config().expect("the default has an upgrade");
    assert_eq!((up.model_name(), up.upgrade.as_deref()), (DEFAULT_UPGRADE, None));
    for off in ["none", ""] {
        let f = Fixture::new().repo(&format!("[embed]\nupgrade = \"{off}\"\n"));
        let embed = f.load().embed().unwrap();
        assert_eq!((embed.upgrade.as_deref(), embed.upgrade_config()), (None, None), "{off:?}");
    }
    let f = Fixture::new().env("SIFT_EMBED_UPGRADE", "none");
    assert_eq!(f.load().embed().unwrap().upgrade, None);
    // No upgrade to the model already in use, nor with embeddings off.
    let f = Fixture::new().repo("[embed]\nmodel = \"all-minilm-l6-v2\"\n");
    assert_eq!(f.load().embed().unwrap().upgrade_config(), None);
    let f = Fixture::new().repo("[embed]\nenabled = false\n");
    assert_eq!(f.load().embed().unwrap().upgrade_config(), None);
}

#[test]
fn each_layer_overrides_the_one_before_it_key_by_key() {
    let f = Fixture::new()
        .user("[embed]\nmodel = \"user\"\nthreads = 3\n[model]\nbackend = \"openai\"\n")
        .repo("[embed]\nmodel = \"repo\"\nbatch = 7\n")
        .editor(json!({ "embed": { "model": "editor", "device": "cuda" } }))
        .env("SIFT_EMBED_MODEL", "env")
        .flag("embed", "model", "--embed-model", toml::Value::String("flag".into()));
    let (user, repo) = (Source::User(f.user_file()), Source::Repo(f.repo_file()));
    let config = f.load();
    let at = |key: &str| config.get("embed", key).unwrap().clone();
    assert_eq!(at("model"), Setting::from(text("flag"), Source::Flag("--embed-model")));
    assert_eq!(at("threads"), Setting::from(Some(Value::Count(3)), user.clone()));
    assert_eq!(at("batch"), Setting::from(Some(Value::Count(7)), repo.clone()));
    assert_eq!(at("device"), Setting::from(text("cuda"), Source::Editor));
    assert_eq!(at("enabled"), Setting::from(Some(Value::Bool(true)), Source::Default));
    assert_eq!(config.model().unwrap().backend, Setting::from(Backend::OpenAi, user.clone()));
    let embed = config.embed().unwrap();
    assert_eq!(
        (embed.model.as_deref(), embed.device, embed.threads),
        (Some("flag"), Device::Cuda, 3)
    );
    assert_eq!(embed.batch, Some(7));

    // Peel the layers off one by one: each time the next one down shows through.
    let mut f = f;
    f.flags.clear();
    assert_eq!(f.load().get("embed", "model").unwrap().source, Source::Env("SIFT_EMBED_MODEL"));
    f.env.remove("SIFT_EMBED_MODEL");
    assert_eq!(
        *f.load().get("embed", "model").unwrap(),
        Setting::from(text("editor"), Source::Editor)
    );
    f.editor = None;
    assert_eq!(*f.load().get("embed", "model").unwrap(), Setting::from(text("repo"), repo));
    std::fs::remove_file(f.repo_file()).unwrap();
    assert_eq!(*f.load().get("embed", "model").unwrap(), Setting::from(text("user"), user));
    std::fs::remove_file(f.user_file()).unwrap();
    assert_eq!(
        *f.load().get("embed", "model").unwrap(),
        Setting::from(text(DEFAULT_MODEL), Source::Default)
    );
}

#[test]
fn flags_override_the_index_section_and_the_environment_sets_the_update_knobs() {
    let f = Fixture::new()
        .repo("[index]\nmax_file_size = \"2 MiB\"\nfollow_symlinks = true\n")
        .editor(json!({ "index": { "follow_symlinks": false } }))
        .env("SIFT_THREADS", "0")
        .env("SIFT_COMMIT_INTERVAL_MS", " 15 ")
        .flag("index", "max_file_size", "--max-file-size", toml::Value::Integer(100));
    let config = f.load();
    assert_eq!(
        config.index().unwrap(),
        IndexConfig { max_file_size: 100, follow_symlinks: false, ..IndexConfig::default() }
    );
    assert_eq!(
        config.get("index", "max_file_size").unwrap().source,
        Source::Flag("--max-file-size")
    );
    assert_eq!(config.get("index", "follow_symlinks").unwrap().source, Source::Editor);
    let opts = config.update_options(Duration::from_secs(10)).unwrap();
    // 0 threads counts as one, as it always did.
    assert_eq!((opts.threads, opts.commit_interval), (1, Duration::from_millis(15)));
    assert_eq!(config.get("index", "threads").unwrap().source, Source::Env("SIFT_THREADS"));
}

#[test]
fn the_model_section_keeps_where_each_value_came_from() {
    let f = Fixture::new()
        .user("[model]\nbackend = \"openai\"\nname = \"user-model\"\napi_key_env = \"USER_KEY\"\ncontext_window = 4096\n")
        .repo("[index]\nmax_file_size = 10\n[model]\nname = \"repo-model\"\ncontext_window = 16384\n")
        .env("SIFT_MODEL_NAME", "env-model");
    let (user, repo) = (Source::User(f.user_file()), Source::Repo(f.repo_file()));
    let model = f.load().model().unwrap();
    assert_eq!(model.backend, Setting::from(Backend::OpenAi, user.clone()));
    assert_eq!(model.api_key_env, Setting::from(Some("USER_KEY".into()), user));
    assert_eq!(model.context_window, Setting::from(16384, repo));
    assert_eq!(model.name, Setting::from(Some("env-model".into()), Source::Env("SIFT_MODEL_NAME")));
    assert_eq!(model.base_url.source, Source::Default);
}

#[test]
fn every_environment_variable_overrides_the_files() {
    let f = Fixture::new()
        .user("[model]\nbackend = \"openai\"\nbase_url = \"http://a/v1\"\ndevice = \"cpu\"\n[embed]\nonnxruntime = \"/a/lib.so\"\n")
        .env("SIFT_MODEL_BACKEND", "onnx")
        .env("SIFT_MODEL_BASE_URL", "http://127.0.0.1:9/v1/")
        .env("SIFT_MODEL_PATH", "/models/decoder")
        .env("SIFT_MODEL_DEVICE", "cuda")
        .env("SIFT_EMBED_DEVICE", "cuda")
        .env("ORT_DYLIB_PATH", "/b/lib.so");
    let config = f.load();
    let model = config.model().unwrap();
    assert_eq!(model.backend.value, Backend::Onnx);
    assert_eq!(model.base_url.value, "http://127.0.0.1:9/v1");
    assert_eq!(model.path.value.as_deref(), Some(Path::new("/models/decoder")));
    assert_eq!(model.device, Setting::from(Device::Cuda, Source::Env("SIFT_MODEL_DEVICE")));
    let embed = config.embed().unwrap();
    assert_eq!(embed.device, Device::Cuda);
    assert_eq!(embed.onnxruntime.as_deref(), Some(Path::new("/b/lib.so")));
    // An empty variable is no setting.
    let f = Fixture::new().repo("[embed]\nmodel = \"repo\"\n").env("SIFT_EMBED_MODEL", " ");
    assert_eq!(f.load().embed().unwrap().model.as_deref(), Some("repo"));
}

#[test]
fn relative_paths_are_the_layers_own() {
    let f = Fixture::new().user("[model]\npath = \"user-model\"\n");
    assert_eq!(f.load().model().unwrap().path.value, Some(f.xdg.join("sift/user-model")));
    let f =
        f.repo("[model]\npath = \"models/d\"\n[embed]\nonnxruntime = \"lib/libonnxruntime.so\"\n");
    let config = f.load();
    assert_eq!(config.model().unwrap().path.value, Some(f.root.join("models/d")));
    assert_eq!(config.embed().unwrap().onnxruntime, Some(f.root.join("lib/libonnxruntime.so")));
    let f = f.editor(json!({ "model": { "path": "editor/d" }, "embed": { "onnxruntime": "" } }));
    let config = f.load();
    assert_eq!(config.model().unwrap().path.value, Some(f.root.join("editor/d")));
    // Empty: unset again, whatever the layers below said.
    assert_eq!(config.embed().unwrap().onnxruntime, None);
    assert_eq!(config.get("embed", "onnxruntime").unwrap().source, Source::Editor);
    let f = f.env("SIFT_MODEL_PATH", "env/d");
    assert_eq!(f.load().model().unwrap().path.value, Some(PathBuf::from("env/d")));
}

#[test]
fn the_user_file_is_under_xdg_config_home_else_home() {
    let env_of = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    };
    let p = user_config_path(&env_of(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]));
    assert_eq!(p, Some(PathBuf::from("/x/sift/config.toml")));
    let p = user_config_path(&env_of(&[("XDG_CONFIG_HOME", ""), ("HOME", "/h")]));
    assert_eq!(p, Some(PathBuf::from("/h/.config/sift/config.toml")));
    let p = user_config_path(&env_of(&[("XDG_CONFIG_HOME", "relative"), ("HOME", "/h")]));
    assert_eq!(p, Some(PathBuf::from("/h/.config/sift/config.toml")));
    assert_eq!(user_config_path(&env_of(&[])), None);
}

#[test]
fn bad_values_name_the_file_the_table_and_the_key() {
    let cases = [
        ("[index]\nmax_file_size = \"huge\"\n", "[index] max_file_size: \"huge\" is not a size"),
        (
            "[index]\nmax_file_size = 0\n",
            "[index] max_file_size: expected a positive number of bytes",
        ),
        (
            "[index]\nmax_file_sise = 3\n",
            "[index] max_file_sise: unknown key (known: max_file_size, follow_symlinks, outside_links, index_secrets, keep_watching_secs)",
        ),
        ("[index]\nthreads = 3\n", "[index] threads: set by SIFT_THREADS only"),
        (
            "[index]\nfollow_symlinks = \"no\"\n",
            "[index] follow_symlinks: expected true or false, found \"no\"",
        ),
        (
            "[embed]\ndevice = \"tpu\"\n",
            "[embed] device: \"tpu\" is not a device: use \"cpu\" or \"cuda\"",
        ),
        ("[embed]\nbatch = -1\n", "[embed] batch: expected a whole number of at least 0, found -1"),
        ("[embed]\nmodle = \"x\"\n", "[embed] modle: unknown key (known: model, upgrade, device,"),
        ("[model]\nbakend = \"openai\"\n", "[model] bakend: unknown key"),
        (
            "[model]\nbackend = \"llama\"\n",
            "[model] backend: \"llama\" is not a backend: use \"onnx\" or \"openai\"",
        ),
        ("[model]\ncontext_window = \"big\"\n", "[model] context_window: expected a whole number"),
        (
            "[model]\ntimeout_secs = 0\n",
            "[model] timeout_secs: expected a whole number of at least 1",
        ),
        (
            "[model]\nbase_url = \"localhost:8080\"\n",
            "[model] base_url: \"localhost:8080\" is not an http",
        ),
        ("[model]\nname = 3\n", "[model] name: expected a string, found integer"),
        (
            "[model]\napi_key_env = \"$OPENAI_API_KEY\"\n",
            "[model] api_key_env: \"$OPENAI_API_KEY\" is not",
        ),
        (
            "[model]\napi_key = \"sk-1\"\n",
            "[model] api_key: sift never reads an API key from configuration",
        ),
        ("model = 1\n", "model must be a table ([model]), not a integer"),
    ];
    for (text, wanted) in cases {
        let f = Fixture::new().repo(text);
        let err = f.error();
        let layer = format!("repository config {}: ", f.repo_file().display());
        assert!(err.starts_with(&layer), "{text:?}: {err}");
        assert!(err.contains(wanted), "{text:?}: {err}");
    }
}

#[test]
fn a_secret_put_where_a_variable_name_belongs_is_never_echoed() {
    for f in [
        Fixture::new().repo("[model]\napi_key_env = \"sk-proj-abc123\"\n"),
        Fixture::new().editor(json!({ "model": { "api_key_env": "sk-proj-abc123" } })),
        Fixture::new().editor(json!({ "model": { "api_key": "sk-proj-abc123" } })),
    ] {
        let config = f.load();
        let err = f.error();
        assert!(err.contains("[model] api_key"), "{err}");
        assert!(!err.contains("abc123"), "{err}");
        assert!(!config.to_json().to_string().contains("abc123"));
    }
}

#[test]
fn other_layers_name_themselves_in_errors() {
    let f = Fixture::new().editor(json!({ "index": { "max_file_size": true } }));
    assert!(f.error().starts_with("editor settings (initializationOptions): [index] max_file_size: expected a positive number"), "{}", f.error());
    let f = Fixture::new().editor(json!({ "review": "off" }));
    assert_eq!(
        f.error(),
        "editor settings (initializationOptions): review must be a table ([review]), not a string"
    );
    let f = Fixture::new().env("SIFT_THREADS", "many");
    assert_eq!(
        f.error(),
        "environment SIFT_THREADS: [index] threads: expected a whole number of at least 0, found \"many\""
    );
    let f = Fixture::new().env("SIFT_MODEL_BACKEND", "gpt");
    assert!(
        f.error().starts_with(
            "environment SIFT_MODEL_BACKEND: [model] backend: \"gpt\" is not a backend"
        )
    );
    let f =
        Fixture::new().flag("index", "max_file_size", "--max-file-size", toml::Value::Integer(-1));
    assert!(f.error().starts_with("flag --max-file-size: [index] max_file_size:"), "{}", f.error());
    let f = Fixture::new().user("[embed]\nenabled = 1\n");
    assert!(
        f.error()
            .starts_with(&format!("user config {}: [embed] enabled:", f.user_file().display()))
    );
}

#[test]
fn a_bad_section_fails_alone_and_the_earlier_value_stays_in_force() {
    let f = Fixture::new()
        .user("[model]\ncontext_window = 4096\n")
        .repo("[model]\ncontext_window = 1\n[index]\nfollow_symlinks = false\n");
    let config = f.load();
    assert!(config.model().unwrap_err().to_string().contains("[model] context_window"));
    assert!(!config.index().unwrap().follow_symlinks);
    assert!(config.embed().is_ok() && config.review().is_ok());
    // `sift config show` still shows the value that holds.
    let setting = config.get("model", "context_window").unwrap();
    assert_eq!(setting, &Setting::from(Some(Value::Count(4096)), Source::User(f.user_file())));
    assert_eq!(config.errors().len(), 1);
}

#[test]
fn unknown_tables_and_review_keys_are_ignored_and_listed() {
    let f = Fixture::new()
        .repo("[future]\nk = 3\n[review]\non_save = false\nsomething = 1\n")
        .editor(json!({ "siftTestHooks": true, "review": { "later": 2 } }));
    let config = f.load();
    assert!(config.errors().is_empty(), "{:?}", config.errors());
    assert_eq!(config.review().unwrap(), ReviewSettings { on_save: false });
    let ignored: Vec<String> = config.ignored().iter().map(|i| i.to_string()).collect();
    let repo = f.repo_file().display().to_string();
    assert_eq!(
        ignored,
        [
            format!("repository config {repo}: [future]"),
            format!("repository config {repo}: [review] something"),
            "editor settings (initializationOptions): [review] later".to_owned(),
        ]
    );
}

#[test]
fn editor_nulls_are_no_setting() {
    let f = Fixture::new()
        .repo("[review]\non_save = false\n")
        .editor(json!({ "review": { "on_save": null }, "embed": null }));
    let config = f.load();
    assert!(!config.review().unwrap().on_save);
    assert_eq!(config.get("review", "on_save").unwrap().source, Source::Repo(f.repo_file()));
}

#[test]
fn files_that_cannot_be_parsed_fail_the_load_with_where() {
    let f = Fixture::new().repo("[index]\nmax_file_size = 3\n[model\n");
    let err = f.try_load().unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:3:", f.repo_file().display())), "{err}");
    assert!(!err.contains('\n'), "{err}");
    let f = Fixture::new().user("= 1");
    let err = f.try_load().unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:1:1: ", f.user_file().display())), "{err}");
    // A missing root is reported as such.
    let mut f = Fixture::new();
    f.root = f.root.join("missing");
    let err = f.try_load().unwrap_err();
    assert!(matches!(err, ConfigError::Root(_)), "{err}");
}

#[test]
fn the_show_object_has_every_key_with_its_value_and_source() {
    let f = Fixture::new()
        .repo("[index]\nmax_file_size = \"2 MiB\"\n[foo]\n")
        .env("SIFT_THREADS", "3")
        .flag("index", "follow_symlinks", "--no-follow-symlinks", toml::Value::Boolean(false));
    let v = f.load().to_json();
    assert_eq!(v["root"], json!(f.root.display().to_string()));
    assert_eq!(
        v["files"][0],
        json!({ "layer": "user", "path": f.user_file().display().to_string(), "found": false })
    );
    assert_eq!(v["files"][1]["found"], json!(true));
    let index = &v["sections"]["index"];
    assert_eq!(
        index["max_file_size"],
        json!({ "value": 2 << 20, "source": { "layer": "repository", "path": f.repo_file().display().to_string() } })
    );
    assert_eq!(
        index["threads"],
        json!({ "value": 3, "source": { "layer": "environment", "variable": "SIFT_THREADS" } })
    );
    assert_eq!(
        index["follow_symlinks"],
        json!({ "value": false, "source": { "layer": "flag", "flag": "--no-follow-symlinks" } })
    );
    assert_eq!(
        index["commit_interval_ms"],
        json!({ "value": null, "source": { "layer": "default" } })
    );
    assert_eq!(v["sections"]["model"]["backend"]["value"], json!("onnx"));
    assert_eq!(v["errors"], json!([]));
    assert_eq!(v["ignored"].as_array().unwrap().len(), 1);
    let keys: usize = SECTIONS.iter().map(|s| s.keys.len()).sum();
    let shown: usize =
        v["sections"].as_object().unwrap().values().map(|s| s.as_object().unwrap().len()).sum();
    assert_eq!(shown, keys);
}

#[test]
fn the_schema_describes_every_key_files_may_set() {
    let schema = schema::json_schema();
    let tables = schema["properties"].as_object().unwrap();
    assert_eq!(
        tables.keys().collect::<Vec<_>>(),
        ["agent", "embed", "feedback", "github", "index", "model", "review", "sandbox", "search"]
    );
    // Only the pull-request bot's table is marked as having no editor setting.
    let no_editor: Vec<&String> =
        tables.iter().filter(|(_, t)| t["x-sift-editor"] == json!(false)).map(|(n, _)| n).collect();
    assert_eq!(no_editor, ["github"]);
    for section in SECTIONS {
        let table = &tables[section.name];
        assert_eq!(
            table["additionalProperties"] == json!(false),
            section.strict,
            "{}",
            section.name
        );
        let props = table["properties"].as_object().unwrap();
        for key in section.keys {
            assert_eq!(
                props.contains_key(key.name),
                key.in_files,
                "[{}] {}",
                section.name,
                key.name
            );
        }
    }
    let index = &tables["index"]["properties"];
    assert_eq!(index["max_file_size"]["type"], json!(["integer", "string"]));
    assert_eq!(index["max_file_size"]["default"], json!("1 MiB"));
    assert_eq!(tables["model"]["properties"]["device"]["enum"], json!(["cpu", "cuda"]));
    assert_eq!(tables["model"]["properties"]["device"]["x-sift-env"], json!("SIFT_MODEL_DEVICE"));
    assert_eq!(tables["model"]["properties"]["context_window"]["default"], json!(8192));
    assert!(tables["model"]["properties"].get("api_key").is_none());
    assert_eq!(
        tables["review"]["properties"]["on_save"],
        json!({ "type": "boolean", "default": true, "description": review::SECTION.keys[0].doc })
    );
    let allow_net = &tables["sandbox"]["properties"]["allow_net"];
    assert_eq!(allow_net["type"], json!("array"));
    assert_eq!(allow_net["items"], json!({ "type": "string" }));
    assert_eq!(allow_net["default"], json!([]));
    let secrets = &tables["sandbox"]["properties"]["secret_patterns"]["default"];
    assert!(secrets.as_array().unwrap().contains(&json!(".env")));
    let env_only: Vec<_> = schema::environment_only().iter().map(|e| e.2).collect();
    assert_eq!(env_only, ["SIFT_THREADS", "SIFT_COMMIT_INTERVAL_MS"]);
}

#[test]
fn every_default_is_a_valid_value_of_its_key() {
    for section in SECTIONS {
        for key in section.keys {
            let value = key.default_value();
            match &key.default {
                spec::Default::Unset => assert_eq!(value, None),
                _ => assert!(value.is_some(), "[{}] {}", section.name, key.name),
            }
        }
    }
}

#[test]
fn any_value_of_any_kind_in_any_key_builds_or_fails_its_section_never_panics() {
    let values = ["\"\"", "\"x\"", "0", "1", "-1", "true", "1.5", "[1]", "{ a = 1 }", "\"cuda\""];
    for section in SECTIONS {
        for key in section.keys.iter().filter(|k| k.in_files) {
            for value in values {
                let f =
                    Fixture::new().repo(&format!("[{}]\n{} = {value}\n", section.name, key.name));
                let config = f.load();
                let built = [
                    config.index().err(),
                    config.embed().err(),
                    config.model().err(),
                    config.review().err(),
                    config.sandbox().err(),
                ];
                let failed: Vec<_> = built.into_iter().flatten().collect();
                assert!(failed.iter().all(|e| e.section == section.name), "{failed:?}");
                let _ = config.update_options(Duration::from_secs(1));
                let _ = config.to_json();
            }
        }
    }
}

#[test]
fn empty_text_is_unset() {
    let f = Fixture::new()
        .user("[model]\nname = \"user\"\n")
        .repo("[model]\nname = \"\"\napi_key_env = \"\"\n[embed]\nmodel = \"\"\n");
    let config = f.load();
    let model = config.model().unwrap();
    assert_eq!(model.name, Setting::from(None, Source::Repo(f.repo_file())));
    assert_eq!(model.api_key_env.value, None);
    assert_eq!(config.embed().unwrap().model_name(), DEFAULT_MODEL);
}

#[test]
fn agent_checkers_and_budget_come_from_the_files_and_the_editor() {
    use crate::config::Format;
    let f = Fixture::new();
    let agent = f.load().agent().unwrap();
    assert_eq!(agent.checkers, None, "no checkers configured: detect them");
    assert_eq!(agent.budget, crate::config::Budget::default());

    let f = Fixture::new()
        .user("[agent]\nmax_steps = 12\n")
        .repo("[agent]\ncheckers = [\"mypy --strict .\", \"cargo clippy --message-format=json\"]\ntimeout_secs = 60\n")
        .editor(json!({"agent": {"max_tokens": 5000}}));
    let agent = f.load().agent().unwrap();
    let checkers = agent.checkers.unwrap();
    assert_eq!(
        checkers.iter().map(|c| (c.name.as_str(), c.format)).collect::<Vec<_>>(),
        [("mypy", Format::Lines), ("cargo", Format::CargoJson)]
    );
    assert_eq!(agent.budget.max_steps, 12);
    assert_eq!(agent.budget.max_tokens, 5000);
    assert_eq!(agent.budget.max_duration, Duration::from_secs(60));

    let f = Fixture::new().repo("[agent]\nmax_step = 3\n");
    assert!(f.error().contains("max_step"), "{}", f.error());
}

#[test]
fn only_the_user_or_a_flag_can_leave_a_watcher_running() {
    let secs = |f: &Fixture| f.load().keep_watching().map_err(|e| e.to_string());
    assert_eq!(secs(&Fixture::new()), Ok(None), "none by default");
    let f = Fixture::new().user("[index]\nkeep_watching_secs = 600\n");
    assert_eq!(secs(&f), Ok(Some(Duration::from_secs(600))));
    let f = Fixture::new()
        .user("[index]\nkeep_watching_secs = 600\n")
        .repo("[index]\nkeep_watching_secs = 0\n");
    // A repository's value is refused, even 0 over the user's 600.
    let err = secs(&f).unwrap_err();
    assert!(
        err.contains("keep_watching_secs") && err.contains("cannot start background processes"),
        "{err}"
    );
    let f = f.flag("index", "keep_watching_secs", "--keep-watching", toml::Value::Integer(5));
    assert_eq!(secs(&f), Ok(Some(Duration::from_secs(5))), "the flag wins over the repository");
    let f = Fixture::new().user("[index]\nkeep_watching_secs = 100000\n");
    assert_eq!(secs(&f), Ok(Some(Duration::from_secs(86_400))), "at most a day");
}
