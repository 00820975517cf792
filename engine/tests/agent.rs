//! The agent loop's mechanics on a real index with a scripted model: tool calls and their
//! answers, edits that stay in memory, malformed calls reported back, budgets, cancellation
//! inside a tool, compaction and what survives it, transcripts and resuming, best-of-K.

use std::collections::BTreeMap;
use std::path::Path;

use sift_engine::Workspace;
use sift_engine::agent::best::run_best_of;
use sift_engine::agent::checkers::{Checker, Format};
use sift_engine::agent::rules::Rules;
use sift_engine::agent::{self, Budget, Event, Options, Session, Stop, Task, Transcript};
use sift_engine::embeddings::Semantic;
use sift_indexer::{CodeIndex, NoProgress, UpdateOptions};
use sift_runtime::llm::scripted::{ScriptedModel, ScriptedTurn};
use sift_runtime::llm::{Cancel, Role};
use sift_runtime::sandbox::{Policy, SandboxSettings};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const RETRY: &str = "def backoff_delay(attempt):\n    \"\"\"Seconds to wait before retrying.\"\"\"\n    return min(60, 2 ** attempt)\n";

struct Fixture {
    dir: tempfile::TempDir,
    workspace: Workspace,
    policy: Policy,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "core/retry.py", RETRY);
    write(dir.path(), "core/util.py", "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n");
    write(dir.path(), "AGENTS.md", "Always keep docstrings.");
    write(dir.path(), ".env", "API_KEY=hunter2\n");
    let (index, _) =
        CodeIndex::open_or_create(&sift_engine::store::open(dir.path()).unwrap()).unwrap();
    index.update(&UpdateOptions::default(), &NoProgress).unwrap();
    let workspace = Workspace::new(index, Semantic::off("tests: lexical only")).unwrap();
    let policy = Policy::for_workspace(dir.path(), &SandboxSettings::default()).unwrap();
    Fixture { dir, workspace, policy }
}

fn rules(f: &Fixture) -> Rules {
    Rules::load(&f.workspace.root, &[])
}

fn args(value: serde_json::Value) -> String {
    value.to_string()
}

#[test]
fn a_run_searches_reads_edits_and_leaves_the_disk_alone() {
    let f = fixture();
    let unsaved = BTreeMap::new();
    let mut session = Session::new(&f.workspace, &unsaved, &f.policy, &[], rules(&f)).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::text("Looking.").tool_call(
            "",
            "search",
            &args(serde_json::json!({"query": "backoff delay retry"})),
        ),
        ScriptedTurn::default().tool_call(
            "",
            "read",
            &args(serde_json::json!({"path": "core/retry.py"})),
        ),
        ScriptedTurn::default().tool_call(
            "",
            "edit",
            &args(serde_json::json!({
                "path": "core/retry.py",
                "old_text": "return min(60, 2 ** attempt)",
                "new_text": "return min(30, 2 ** attempt)"
            })),
        ),
        ScriptedTurn::text("Capped the delay at 30 seconds in core/retry.py."),
    ]);
    let options = Options::default();
    let mut events = Vec::new();
    let outcome = agent::run(
        &mut session,
        &model,
        Task {
            text: "cap the retry delay at 30 s",
            resumed: vec![],
            options: &options,
            transcript: None,
        },
        &Cancel::new(),
        &mut |e| events.push(e),
    );
    assert_eq!(outcome.stop, Stop::Done);
    assert_eq!(outcome.steps, 4);
    assert!(outcome.answer.contains("30 seconds"));
    let diff = outcome.changes.unified_diff();
    assert!(
        diff.contains("-    return min(60, 2 ** attempt)\n+    return min(30, 2 ** attempt)\n"),
        "{diff}"
    );
    assert_eq!(std::fs::read_to_string(f.dir.path().join("core/retry.py")).unwrap(), RETRY);
    assert_eq!(outcome.rules, ["AGENTS.md"]);

    // What the model saw: the search found the file, read showed numbered lines, the edit
    // confirmed the line; the rules were pinned in the system prompt.
    let requests = model.requests();
    let first = &requests[0];
    assert_eq!(first.messages[0].role, Role::System);
    assert!(first.messages[0].content.contains("Always keep docstrings."));
    let tool_answers: Vec<&str> = requests[3]
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert!(tool_answers[0].contains("core/retry.py:1-3"), "{}", tool_answers[0]);
    assert!(tool_answers[1].starts_with("core/retry.py (lines 1-3 of 3)"), "{}", tool_answers[1]);
    assert!(tool_answers[1].contains("3      return min(60"), "{}", tool_answers[1]);
    assert!(
        tool_answers[2].starts_with("edited core/retry.py: replaced 1 line at line 3"),
        "{}",
        tool_answers[2]
    );
    let calls: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["search", "read", "edit"]);
}

#[test]
fn malformed_calls_and_refused_paths_go_back_to_the_model() {
    let f = fixture();
    let unsaved = BTreeMap::new();
    let mut session = Session::new(&f.workspace, &unsaved, &f.policy, &[], rules(&f)).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::default()
            .tool_call("a", "read", "{\"path\": ")
            .tool_call("b", "read", &args(serde_json::json!({"path": "../../etc/passwd"})))
            .tool_call("c", "read", &args(serde_json::json!({"path": ".env"})))
            .tool_call("d", "edit", &args(serde_json::json!({"path": "core/retry.py", "old_text": "return min(61, 2 ** attempt)", "new_text": "x"})))
            .tool_call("e", "shell", "{}")
            .tool_call("f", "create", &args(serde_json::json!({"path": ".git/hooks/pre-commit", "text": "evil"}))),
        ScriptedTurn::text("I could not do it."),
    ]);
    let options = Options::default();
    let outcome = agent::run(
        &mut session,
        &model,
        Task { text: "t", resumed: vec![], options: &options, transcript: None },
        &Cancel::new(),
        &mut |_| {},
    );
    assert_eq!(outcome.stop, Stop::Done);
    assert_eq!(outcome.tool_errors, 6);
    assert!(outcome.changes.is_empty());
    let second = &model.requests()[1];
    let answer = |id: &str| {
        second
            .messages
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some(id))
            .unwrap()
            .content
            .clone()
    };
    assert!(answer("a").contains("not valid JSON"), "{}", answer("a"));
    assert!(answer("b").starts_with("error:"), "{}", answer("b"));
    assert!(!answer("b").contains("root:"), "{}", answer("b"));
    assert!(
        answer("c").starts_with("error:") && !answer("c").contains("hunter2"),
        "{}",
        answer("c")
    );
    // A near miss shows the closest place so the model can copy it exactly.
    assert!(
        answer("d").contains("lines 3-3") && answer("d").contains("return min(60, 2 ** attempt)"),
        "{}",
        answer("d")
    );
    assert!(answer("e").contains("no tool named \"shell\""), "{}", answer("e"));
    assert!(answer("f").starts_with("error:"), "{}", answer("f"));
    assert!(!f.dir.path().join(".git/hooks/pre-commit").exists());
}

#[test]
fn the_step_budget_stops_a_model_that_never_finishes() {
    let f = fixture();
    let unsaved = BTreeMap::new();
    let mut session = Session::new(&f.workspace, &unsaved, &f.policy, &[], rules(&f)).unwrap();
    let turns = (0..10).map(|_| ScriptedTurn::default().tool_call("", "list", "{}"));
    let model = ScriptedModel::new(turns);
    let options =
        Options { budget: Budget { max_steps: 3, ..Budget::default() }, ..Options::default() };
    let outcome = agent::run(
        &mut session,
        &model,
        Task { text: "t", resumed: vec![], options: &options, transcript: None },
        &Cancel::new(),
        &mut |_| {},
    );
    assert_eq!(outcome.stop, Stop::MaxSteps);
    assert_eq!(outcome.steps, 3);
    assert_eq!(model.remaining(), 7);
}

#[test]
fn cancelling_inside_a_tool_kills_the_command_and_ends_the_run() {
    let f = fixture();
    let unsaved = BTreeMap::new();
    // A checker that would run for a minute.
    let slow = [Checker {
        name: "slow".into(),
        command: vec!["sh".into(), "-c".into(), "sleep 60".into()],
        format: Format::Lines,
        timeout_secs: 120,
    }];
    let mut session = Session::new(&f.workspace, &unsaved, &f.policy, &slow, rules(&f)).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::default().tool_call(
            "",
            "edit",
            &args(serde_json::json!({"path": "core/util.py", "old_text": "max(lo, min(x, hi))", "new_text": "min(hi, max(x, lo))"})),
        ),
        ScriptedTurn::default().tool_call("", "check", "{}"),
        ScriptedTurn::text("never reached"),
    ]);
    let cancel = Cancel::new();
    let canceller = cancel.clone();
    let options = Options::default();
    let store = sift_engine::store::open(f.dir.path()).unwrap();
    let transcript = Transcript::create(&store).unwrap();
    let outcome = agent::run(
        &mut session,
        &model,
        Task { text: "t", resumed: vec![], options: &options, transcript: Some(&transcript) },
        &cancel,
        &mut |e| {
            if matches!(&e, Event::ToolCall { name, .. } if name == "check") {
                let c = canceller.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                    c.cancel();
                });
            }
        },
    );
    assert_eq!(outcome.stop, Stop::Cancelled);
    // The check was killed, not waited out (the sandbox says so); the edit is kept.
    let log = std::fs::read_to_string(transcript.path()).unwrap();
    assert!(log.contains("slow: could not run: cancelled"), "{log}");
    assert!(!outcome.changes.is_empty());
    assert_eq!(model.remaining(), 1);
}

#[test]
fn compaction_keeps_the_task_the_rules_and_the_diff_and_drops_the_rest() {
    let f = fixture();
    let big: String = (0..120)
        .map(|i| format!("LONG_LINE_{i} = 'padding to fill the context window'\n"))
        .collect();
    write(f.dir.path(), "core/big.py", &big);
    let unsaved = BTreeMap::new();
    let mut session = Session::new(&f.workspace, &unsaved, &f.policy, &[], rules(&f)).unwrap();
    let edit = args(
        serde_json::json!({"path": "core/util.py", "old_text": "return max(lo, min(x, hi))", "new_text": "return min(hi, max(x, lo))"}),
    );
    let model = ScriptedModel::new([
        ScriptedTurn::default().tool_call("", "edit", &edit),
        ScriptedTurn::default().tool_call(
            "",
            "read",
            &args(serde_json::json!({"path": "core/big.py"})),
        ),
        // The summary turn.
        ScriptedTurn::text("SUMMARY: clamp rewritten in core/util.py; big.py read."),
        ScriptedTurn::text("Done: clamp is rewritten."),
    ]);
    // A window that the pinned part and one edit fit in, and one long read does not.
    let pinned = sift_runtime::llm::ChatRequest {
        messages: vec![
            sift_runtime::llm::Message::system(format!(
                "{}\n\nRules from AGENTS.md:\nAlways keep docstrings.",
                agent::SYSTEM_PROMPT
            )),
            sift_runtime::llm::Message::user("make clamp read better"),
        ],
        tools: agent::tools::specs(),
        params: Default::default(),
    }
    .estimated_prompt_tokens();
    let model = model.with_context_window(2 * (pinned + 400));
    let options = Options {
        params: sift_runtime::llm::GenerationParams { max_tokens: 100, ..Default::default() },
        compact_at: 0.5,
        ..Options::default()
    };
    let store = sift_engine::store::open(f.dir.path()).unwrap();
    let transcript = Transcript::create(&store).unwrap();
    let mut compacted = 0;
    let outcome = agent::run(
        &mut session,
        &model,
        Task {
            text: "make clamp read better",
            resumed: vec![],
            options: &options,
            transcript: Some(&transcript),
        },
        &Cancel::new(),
        &mut |e| {
            if matches!(e, Event::Compacted { .. }) {
                compacted += 1;
            }
        },
    );
    assert_eq!(outcome.stop, Stop::Done, "{:?}", outcome.stop);
    assert_eq!(compacted, 1);
    assert_eq!(outcome.answer, "Done: clamp is rewritten.");
    let requests = model.requests();
    let summary_request = &requests[2];
    assert!(summary_request.tools.is_empty());
    assert!(summary_request.messages[0].content.starts_with("Summarise"));
    assert!(summary_request.messages[1].content.contains("make clamp read better"));
    assert!(summary_request.messages[1].content.contains("LONG_LINE_99"));
    let last = requests.last().unwrap();
    // Pinned: the system prompt with the rules, and the task, verbatim.
    assert!(last.messages[0].content.contains("Always keep docstrings."));
    assert_eq!(last.messages[1].content, "make clamp read better");
    // The summary and the pending diff stand for the rest; old tool output is gone.
    let rest: String = last.messages[2..].iter().map(|m| m.content.as_str()).collect();
    assert!(rest.contains("SUMMARY: clamp rewritten"), "{rest}");
    assert!(rest.contains("+    return min(hi, max(x, lo))"), "{rest}");
    assert!(!rest.contains("LONG_LINE_3"), "{rest}");

    // The transcript keeps everything, and resuming continues from the compacted state.
    let text = std::fs::read_to_string(transcript.path()).unwrap();
    assert!(text.contains("LONG_LINE_3"));
    let resumed = transcript.resume().unwrap();
    assert!(resumed.ended);
    assert!(resumed.history[0].content.contains("SUMMARY"));
    assert_eq!(resumed.history.len(), 2, "the summary and the final answer");
    assert!(!resumed.changes.is_empty());
}

#[test]
fn best_of_k_runs_isolated_attempts_and_ranks_agreement_first() {
    let f = fixture();
    let unsaved = BTreeMap::new();
    let edit = |new: &str| {
        ScriptedTurn::default().tool_call(
            "",
            "edit",
            &args(serde_json::json!({"path": "core/util.py", "old_text": "return max(lo, min(x, hi))", "new_text": new})),
        )
    };
    let model = ScriptedModel::new([
        edit("return sorted((lo, x, hi))[1]"),
        ScriptedTurn::text("attempt 1"),
        edit("return min(hi, max(x, lo))"),
        ScriptedTurn::text("attempt 2"),
        // Attempt 3 must not see attempt 2's edit: the same old_text matches again.
        edit("return min(hi, max(x, lo))"),
        ScriptedTurn::text("attempt 3"),
    ]);
    let options = Options::default();
    let task = Task { text: "t", resumed: vec![], options: &options, transcript: None };
    let mut sessions = |_| Session::new(&f.workspace, &unsaved, &f.policy, &[], rules(&f));
    let attempts =
        run_best_of(3, &mut sessions, &model, &task, None, &Cancel::new(), &mut |_, _| {}).unwrap();
    assert_eq!(attempts.len(), 3);
    let order: Vec<usize> = attempts.iter().map(|a| a.index).collect();
    assert_eq!(order, [1, 2, 0], "the two that agree first");
    assert_eq!(attempts[0].score.agreement, 1);
    assert!(attempts.iter().all(|a| a.score.files_changed == 1));
    // Attempts 2 and 3 sampled differently from attempt 1.
    let seeds: Vec<Option<u64>> = model.requests().iter().map(|r| r.params.seed).collect();
    assert_eq!(seeds[0], None);
    assert!(seeds[2].is_some() && seeds[2] != seeds[4]);
}

#[test]
fn the_agent_reads_fresh_notes_and_only_proposes_new_ones() {
    use sift_engine::memory::{self, Memory, Notebook, find::NoteVectors};
    let f = fixture();
    let store = sift_engine::store::open(f.dir.path()).unwrap();
    let mem = Memory::open(&store);
    let code = memory::IndexedCode::new(&f.workspace.index, &f.policy);
    let cites = ["core/retry.py#backoff_delay".to_string()];
    let note = memory::new_note(
        &mem,
        &code,
        memory::Draft::new(
            "The retry delay must stay under the load balancer's 90 s timeout.",
            &cites,
        ),
    )
    .unwrap();
    mem.write(&note).unwrap();
    let book = Notebook::load(mem.clone(), &code);
    let vectors = NoteVectors::default();
    let unsaved = BTreeMap::new();
    let mut session = Session::new(&f.workspace, &unsaved, &f.policy, &[], rules(&f))
        .unwrap()
        .with_memory(agent::tools::SessionMemory { book: &book, vectors: &vectors });
    let model = ScriptedModel::new([
        ScriptedTurn::default().tool_call(
            "",
            "recall",
            &args(serde_json::json!({"query": "retry delay timeout"})),
        ),
        ScriptedTurn::default().tool_call(
            "",
            "remember",
            &args(serde_json::json!({
                "text": "I will change the delay next, as this task asks.",
            })),
        ),
        ScriptedTurn::default().tool_call(
            "",
            "remember",
            &args(serde_json::json!({
                "text": "clamp keeps values inside [lo, hi].", "cite": ["core/util.py#nothing"],
            })),
        ),
        ScriptedTurn::default().tool_call(
            "",
            "remember",
            &args(serde_json::json!({
                "text": "clamp keeps values inside [lo, hi].", "cite": ["core/util.py#clamp"],
            })),
        ),
        ScriptedTurn::text("Done."),
    ]);
    let options = Options::default();
    let outcome = agent::run(
        &mut session,
        &model,
        Task {
            text: "make the retry delay shorter",
            resumed: vec![],
            options: &options,
            transcript: None,
        },
        &Cancel::new(),
        &mut |_| {},
    );
    assert_eq!(outcome.stop, Stop::Done);
    let requests = model.requests();
    // The fresh note came with the task, pinned.
    let opening = format!("{:?}", requests[0].messages[1]);
    assert!(opening.contains("90 s timeout"), "{opening}");
    let seen = |i: usize| format!("{:?}", requests[i].messages.last().unwrap());
    assert!(seen(1).contains("90 s timeout"), "recall: {}", seen(1));
    assert!(seen(2).contains("not about the task at hand"), "task talk refused: {}", seen(2));
    assert!(seen(3).contains("not defined in core/util.py"), "bad citation: {}", seen(3));
    assert!(seen(4).contains("proposed note"), "{}", seen(4));
    // One proposal, nothing written.
    assert_eq!(outcome.notes.len(), 1);
    assert_eq!(outcome.notes[0].front.author, memory::Author::Agent);
    assert_eq!(outcome.notes[0].front.citations[0].symbol.as_deref(), Some("clamp"));
    assert_eq!(mem.load().0.len(), 1, "a proposal is not written");
}

/// An approver that answers as told and keeps what it was asked.
struct Answering {
    approve: bool,
    asked: std::sync::Mutex<Vec<agent::approval::Escape>>,
}

impl agent::approval::Approver for Answering {
    fn decide(&self, escape: &agent::approval::Escape, _: &Cancel) -> agent::approval::Decision {
        self.asked.lock().unwrap().push(escape.clone());
        if self.approve {
            agent::approval::Decision::Approved { by: "the test".into() }
        } else {
            agent::approval::Decision::Refused { why: "the test said no".into() }
        }
    }
}

#[test]
fn the_run_tool_works_on_a_copy_and_leaves_the_sandbox_only_when_the_user_approves() {
    let f = fixture();
    let outside = tempfile::tempdir().unwrap();
    let outside_file = outside.path().join("notes.txt");
    std::fs::write(&outside_file, "OUTSIDE-7c1d\n").unwrap();
    let read_outside = format!("cat {}", outside_file.display());
    let store = sift_engine::store::open(f.dir.path()).unwrap();
    let unsaved = BTreeMap::new();
    let call =
        |session: &mut Session<'_>, v: serde_json::Value| session.call("run", &v, &Cancel::new());

    // In the sandbox, on a copy with the pending edit; the workspace is left alone and secret
    // files are not in the copy.
    let refuse = agent::approval::Refuse;
    let mut session = Session::new(&f.workspace, &unsaved, &f.policy, &[], rules(&f)).unwrap();
    session.store = Some(&store);
    session.approver = &refuse;
    let edit = serde_json::json!({"path": "core/util.py", "old_text": "max(lo, min(x, hi))", "new_text": "min(hi, max(x, lo))"});
    assert!(!session.call("edit", &edit, &Cancel::new()).error);
    let out = call(
        &mut session,
        serde_json::json!({"command": "cat core/util.py; echo made > made.txt; cat .env; echo done"}),
    );
    assert!(!out.error, "{}", out.text);
    assert!(out.text.contains("in the sandbox"), "{}", out.text);
    assert!(
        out.text.contains("min(hi, max(x, lo))"),
        "the copy has the pending edit: {}",
        out.text
    );
    assert!(!out.text.contains("hunter2"), "no secret in the copy: {}", out.text);
    assert!(!f.dir.path().join("made.txt").exists(), "nothing reaches the workspace");
    let quiet = call(&mut session, serde_json::json!({"command": "true"}));
    assert!(quiet.text.contains("ran successfully, no output"), "{}", quiet.text);

    // A file outside the workspace is out of reach in the sandbox.
    let walled = call(&mut session, serde_json::json!({"command": read_outside}));
    assert!(!walled.text.contains("OUTSIDE-7c1d"), "{}", walled.text);
    assert!(
        walled.text.contains("outside_sandbox"),
        "the model is told it may ask: {}",
        walled.text
    );

    // Asking without a reason is an error; asking with one, without an approver, is refused.
    let no_why =
        call(&mut session, serde_json::json!({"command": read_outside, "outside_sandbox": true}));
    assert!(no_why.error && no_why.text.contains("needs why"), "{}", no_why.text);
    let refused = call(
        &mut session,
        serde_json::json!({"command": read_outside, "outside_sandbox": true, "why": "it reads my notes"}),
    );
    assert!(refused.error && refused.text.contains("not run"), "{}", refused.text);
    assert!(refused.text.contains("--allow-unsandboxed"), "{}", refused.text);

    // A user who says no: not run. A user who says yes: run outside, this once.
    let no = Answering { approve: false, asked: Default::default() };
    session.approver = &no;
    let said_no = call(
        &mut session,
        serde_json::json!({"command": read_outside, "outside_sandbox": true, "why": "it reads my notes"}),
    );
    assert!(said_no.error && !said_no.text.contains("OUTSIDE-7c1d"), "{}", said_no.text);
    assert_eq!(no.asked.lock().unwrap()[0].why, "it reads my notes");
    let yes = Answering { approve: true, asked: Default::default() };
    session.approver = &yes;
    let approved = call(
        &mut session,
        serde_json::json!({"command": read_outside, "outside_sandbox": true, "why": "it reads my notes"}),
    );
    assert!(approved.text.contains("OUTSIDE-7c1d"), "{}", approved.text);
    assert!(
        approved.text.contains("outside the sandbox: approved by the test"),
        "{}",
        approved.text
    );
    assert_eq!(yes.asked.lock().unwrap()[0].command, read_outside);
    // The next command is back in the sandbox: an approval is for one command.
    let again = call(&mut session, serde_json::json!({"command": read_outside}));
    assert!(!again.text.contains("OUTSIDE-7c1d"), "{}", again.text);

    // Attacks from inside end at the walls and the session goes on: an endless loop at its
    // deadline, a flood of output at the cap.
    let endless = call(
        &mut session,
        serde_json::json!({"command": "while :; do :; done", "timeout_secs": 1}),
    );
    assert!(endless.text.starts_with("timed out"), "{}", endless.text);
    assert!(endless.text.contains("the sandbox stopped: deadline"), "{}", endless.text);
    let flood = call(&mut session, serde_json::json!({"command": "yes | head -c 1000000000"}));
    assert!(flood.text.contains("the sandbox stopped: output over"), "{}", flood.text);
    let alive = call(&mut session, serde_json::json!({"command": "echo alive"}));
    assert!(
        alive.text.starts_with("exit status 0") && alive.text.contains("alive"),
        "{}",
        alive.text
    );

    // Every request is logged with its outcome (the one without a reason never was asked).
    let logged = agent::approval::logged(&store);
    let decisions: Vec<(&str, &str, Option<i32>)> =
        logged.iter().map(|l| (l.decision.as_str(), l.detail.as_str(), l.status)).collect();
    assert_eq!(decisions.len(), 3, "{logged:?}");
    assert_eq!(decisions[0].0, "refused");
    assert_eq!(decisions[1], ("refused", "the test said no", None));
    assert_eq!(decisions[2], ("approved", "the test", Some(0)));
    assert!(logged.iter().all(|l| l.command == read_outside && l.why == "it reads my notes"));
}

#[test]
fn a_plugins_tool_is_offered_checked_and_answered_under_its_limits() {
    let f = fixture();
    let root = f.dir.path();
    std::fs::create_dir_all(root.join(".sift/plugins")).unwrap();
    std::fs::write(
        root.join(".sift/plugins/echoer.wasm"),
        sift_test_support::plugins::component_with_echo_tool(),
    )
    .unwrap();
    std::fs::write(
        root.join(".sift/plugins/broken.wasm"),
        &sift_test_support::plugins::component(&sift_test_support::plugins::Body::Trap)[..100],
    )
    .unwrap();
    let tools = sift_engine::agent::tools::plugin::PluginTools::load(&f.workspace.root, &f.policy);
    // The broken one is left out and said so; the working one is offered.
    assert_eq!(tools.problems.len(), 1, "{:?}", tools.problems);
    assert!(tools.problems[0].contains("broken"), "{:?}", tools.problems);
    let unsaved = BTreeMap::new();
    let mut session = Session::new(&f.workspace, &unsaved, &f.policy, &[], rules(&f)).unwrap();
    session.plugin_tools = Some(&tools);
    let model = ScriptedModel::new([
        ScriptedTurn::default().tool_call(
            "",
            "plugin_echoer_echo",
            &args(serde_json::json!({"text": 3})),
        ),
        ScriptedTurn::default().tool_call(
            "",
            "plugin_echoer_echo",
            &args(serde_json::json!({"text": "hi"})),
        ),
        ScriptedTurn::text("done"),
    ]);
    let options = Options::default();
    let outcome = agent::run(
        &mut session,
        &model,
        Task { text: "use the plugin", resumed: vec![], options: &options, transcript: None },
        &Cancel::new(),
        &mut |_| {},
    );
    assert_eq!(outcome.stop, Stop::Done);
    let requests = model.requests();
    let offered = requests[0].tools.iter().find(|t| t.name == "plugin_echoer_echo");
    let offered = offered.expect("the plugin's tool is offered");
    assert!(offered.description.starts_with("(plugin echoer) Echoes"), "{}", offered.description);
    assert_eq!(offered.parameters["required"], serde_json::json!(["text"]));
    let answers: Vec<&str> = requests[2]
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    // Arguments are checked against the plugin's schema before the plugin sees them.
    assert!(answers[0].starts_with("error:") && answers[0].contains("text"), "{}", answers[0]);
    assert_eq!(answers[1], r#"{"text":"hi"}"#);
    assert_eq!(outcome.tool_errors, 1);
}
