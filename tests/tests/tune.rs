//! `sift model tune` through the real binary with the real (installed) models: a small
//! repository with a scripted history (topics whose code and commit subjects use different
//! words for the same things), where the tuned model must find the newest commits' files better
//! than the base model, having never seen those commits; the date split checked in the
//! provenance; the gate discarding a model that is not better; reset; and the re-embedding rule.
//! Skipped when the models are not installed, unless `SIFT_REQUIRE_MODEL=1`.

use std::path::Path;
use std::process::{Command, Output};

use sift_tests::{models_installed, sift_with_models, stderr, stdout, write};

/// (file, code, three commit subjects that say what changed without the code's words).
const TOPICS: &[(&str, &str, [&str; 3])] = &[
    (
        "net/retry.py",
        "def backoff_delay(attempt):\n    \"\"\"Seconds to sleep before the request is sent again.\"\"\"\n    return min(60, 2 ** attempt)\n",
        [
            "Wait longer between tries when the server is busy",
            "Cap the pause before reconnecting after failures",
            "Stop hammering the remote end after an outage",
        ],
    ),
    (
        "auth/password.py",
        "def check_password(user, candidate):\n    \"\"\"Compare the typed secret with the stored hash in constant time.\"\"\"\n    return hmac.compare_digest(user.hash, digest(candidate))\n",
        [
            "Make sign-in immune to timing attacks",
            "Reject wrong credentials without leaking how close they were",
            "Harden the login secret comparison",
        ],
    ),
    (
        "render/color.py",
        "def blend(a, b, t):\n    \"\"\"Mix two RGBA values, t between zero and one.\"\"\"\n    return tuple(x + (y - x) * t for x, y in zip(a, b))\n",
        [
            "Fade smoothly from one shade to another",
            "Interpolate hues for gradients",
            "Fix the mix of two paints at the halfway point",
        ],
    ),
    (
        "store/cache.py",
        "class Cache:\n    def get(self, key):\n        \"\"\"The stored value unless it has expired.\"\"\"\n        entry = self.items.get(key)\n        return entry.value if entry and entry.expires > now() else None\n",
        [
            "Forget remembered results once they are stale",
            "Serve memoized answers only while they are fresh",
            "Drop outdated entries from the in-memory store",
        ],
    ),
    (
        "mail/send.py",
        "def send_message(to, subject, body):\n    \"\"\"Hand the e-mail to the SMTP relay.\"\"\"\n    with smtplib.SMTP(RELAY) as s:\n        s.sendmail(FROM, [to], compose(subject, body))\n",
        [
            "Deliver notifications to people's inboxes",
            "Route outgoing letters through the relay host",
            "Handle a refused recipient when notifying users",
        ],
    ),
    (
        "geo/distance.py",
        "def haversine(lat1, lon1, lat2, lon2):\n    \"\"\"Great-circle kilometres between two points on the globe.\"\"\"\n    return 2 * R * asin(sqrt(hav(lat2 - lat1) + cos(lat1) * cos(lat2) * hav(lon2 - lon1)))\n",
        [
            "Measure how far apart two places on Earth are",
            "Correct the travel length between map coordinates",
            "Use the planet's curvature for route lengths",
        ],
    ),
    (
        "pay/invoice.py",
        "def total_due(lines, vat):\n    \"\"\"Sum of the lines plus value added tax, rounded to cents.\"\"\"\n    return round(sum(l.price * l.qty for l in lines) * (1 + vat), 2)\n",
        [
            "Bill customers the right amount including tax",
            "Round the amount owed on receipts",
            "Fix what clients are charged for several items",
        ],
    ),
    (
        "text/slug.py",
        "def slugify(title):\n    \"\"\"Lower-case words joined by hyphens, for URLs.\"\"\"\n    return '-'.join(re.findall(r'[a-z0-9]+', title.lower()))\n",
        [
            "Make page addresses readable from headlines",
            "Turn article names into web-friendly paths",
            "Keep digits when building link names from headings",
        ],
    ),
    (
        "sched/cron.py",
        "def next_run(expression, after):\n    \"\"\"The next minute the crontab expression fires.\"\"\"\n    return first(m for m in minutes(after) if matches(expression, m))\n",
        [
            "Compute when the periodic job starts next",
            "Fix timed tasks firing an hour late",
            "Support every-weekday schedules for background work",
        ],
    ),
    (
        "img/thumb.py",
        "def make_thumbnail(image, size):\n    \"\"\"A smaller copy keeping the aspect ratio.\"\"\"\n    w, h = image.size\n    scale = size / max(w, h)\n    return image.resize((int(w * scale), int(h * scale)))\n",
        [
            "Shrink uploaded pictures for previews",
            "Keep photos from looking stretched in the gallery",
            "Produce small versions of avatars",
        ],
    ),
    (
        "db/migrate.py",
        "def apply_migrations(conn, steps):\n    \"\"\"Run the schema changes not applied yet, in order.\"\"\"\n    for step in pending(conn, steps):\n        conn.execute(step.sql)\n",
        [
            "Upgrade the tables when a release changes the layout",
            "Evolve the database structure in sequence",
            "Skip schema steps that already ran",
        ],
    ),
    (
        "log/rotate.py",
        "def rotate(path, keep):\n    \"\"\"Rename the log to .1, .2 and delete the oldest.\"\"\"\n    for n in range(keep, 0, -1):\n        shift(path, n)\n",
        [
            "Stop diagnostics files from filling the disk",
            "Keep only the last few journals of the service",
            "Archive yesterday's output and start fresh",
        ],
    ),
    (
        "crypto/token.py",
        "def new_token(nbytes=32):\n    \"\"\"A random URL-safe secret for sessions.\"\"\"\n    return secrets.token_urlsafe(nbytes)\n",
        [
            "Generate unguessable session identifiers",
            "Use a stronger randomness source for keys",
            "Lengthen the codes in password reset links",
        ],
    ),
    (
        "ui/pagination.py",
        "def page_slice(items, page, per_page):\n    \"\"\"The items shown on one page of a listing.\"\"\"\n    start = (page - 1) * per_page\n    return items[start:start + per_page]\n",
        [
            "Split long result lists into screens",
            "Fix the last screen of search results being empty",
            "Show twenty rows at a time in tables",
        ],
    ),
    (
        "search/rank.py",
        "def bm25(tf, df, n, length, avg):\n    \"\"\"Okapi relevance of a term in a document.\"\"\"\n    return idf(df, n) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg))\n",
        [
            "Order query hits by how relevant they are",
            "Weigh rare words higher when scoring matches",
            "Penalise very long pages in result ordering",
        ],
    ),
    (
        "io/csv_export.py",
        "def write_rows(path, rows):\n    \"\"\"Comma-separated values with a header line.\"\"\"\n    with open(path, 'w', newline='') as f:\n        csv.writer(f).writerows(rows)\n",
        [
            "Let people download their data as a spreadsheet",
            "Quote fields with commas when saving tables",
            "Add column titles to the exported file",
        ],
    ),
    (
        "http/cors.py",
        "def allow_origin(request, allowed):\n    \"\"\"Set Access-Control-Allow-Origin for listed sites.\"\"\"\n    origin = request.headers.get('Origin')\n    return origin if origin in allowed else None\n",
        [
            "Let other websites call our API from browsers",
            "Refuse cross-site requests from unknown domains",
            "Answer preflight checks from the front end",
        ],
    ),
    (
        "time/zone.py",
        "def to_local(instant, zone):\n    \"\"\"Convert a UTC datetime to the user's zone.\"\"\"\n    return instant.astimezone(ZoneInfo(zone))\n",
        [
            "Show dates in each person's own clock",
            "Fix daylight saving shifts in displayed hours",
            "Respect the region's offset when printing times",
        ],
    ),
    (
        "queue/worker.py",
        "def consume(queue, handler):\n    \"\"\"Take jobs off the queue and acknowledge them once handled.\"\"\"\n    while job := queue.pop():\n        handler(job)\n        queue.ack(job)\n",
        [
            "Process background tasks one after another",
            "Don't lose pending work when a handler crashes",
            "Confirm finished jobs to the broker",
        ],
    ),
    (
        "math/stats.py",
        "def median(values):\n    \"\"\"The middle value of the sorted list.\"\"\"\n    s = sorted(values)\n    mid = len(s) // 2\n    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2\n",
        [
            "Report the typical figure robust to outliers",
            "Fix the central value for lists of even length",
            "Summarise measurements by their midpoint",
        ],
    ),
    (
        "files/upload.py",
        "def save_upload(stream, folder, limit):\n    \"\"\"Store an uploaded file, refusing ones over the limit.\"\"\"\n    data = stream.read(limit + 1)\n    if len(data) > limit:\n        raise TooLarge()\n",
        [
            "Reject attachments that are too big",
            "Keep files people send us on disk",
            "Stop huge submissions from exhausting memory",
        ],
    ),
    (
        "i18n/plural.py",
        "def plural_form(n, forms):\n    \"\"\"Pick the translation for a count.\"\"\"\n    return forms[0] if n == 1 else forms[1]\n",
        [
            "Say one item or several items correctly",
            "Choose the right wording for quantities in other languages",
            "Fix messages about zero things",
        ],
    ),
    (
        "audit/history.py",
        "def record_change(model, field, old, new):\n    \"\"\"Append who changed what to the audit trail.\"\"\"\n    AuditEntry.create(model=model, field=field, before=old, after=new, user=current())\n",
        [
            "Keep track of who edited each record",
            "Let admins see earlier versions of a row",
            "Log modifications for compliance reviews",
        ],
    ),
    (
        "ratelimit/bucket.py",
        "def allow(bucket, now):\n    \"\"\"Token bucket: refill by rate, spend one per call.\"\"\"\n    bucket.tokens = min(bucket.size, bucket.tokens + (now - bucket.last) * bucket.rate)\n    return bucket.spend()\n",
        [
            "Throttle clients that call too often",
            "Limit requests per minute for each key",
            "Let short bursts through while capping sustained traffic",
        ],
    ),
];

fn git(root: &Path, args: &[&str], time: u64) {
    let date = format!("{time} +0000");
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The repository: every topic's file, then three rounds of commits, one per topic and round,
/// each touching its file and saying what changed in other words.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"], 1_700_000_000);
    let mut time = 1_700_000_000;
    for (file, code, _) in TOPICS {
        write(root, file, code);
    }
    git(root, &["add", "-A"], time);
    git(root, &["commit", "-q", "-m", "Initial import of the project"], time);
    for round in 0..3 {
        for (n, (file, code, subjects)) in TOPICS.iter().enumerate() {
            time += 3600;
            write(root, file, format!("{code}\n# revision {round}.{n}\n"));
            git(root, &["commit", "-q", "-am", subjects[round]], time);
        }
    }
    dir
}

fn tune(root: &Path, args: &[&str]) -> Output {
    sift_with_models().args(["model", "tune", "--path"]).arg(root).args(args).output().unwrap()
}

fn index_json(root: &Path) -> serde_json::Value {
    let out = sift_with_models().args(["index", "--json"]).arg(root).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

#[test]
fn tuning_on_the_history_finds_the_newest_commits_files_better_and_is_gated() {
    if !models_installed() {
        return;
    }
    let dir = repo();
    let root = dir.path();
    index_json(root);
    let out = tune(root, &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    // The date split: the newest fifth held out, every trained commit older than every held-out
    // one, none of them trained on.
    let trained: Vec<&str> =
        p["trained_commits"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let held: Vec<&str> =
        p["held_out_commits"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(trained.len() + held.len(), TOPICS.len() * 3, "{p}");
    assert_eq!(held.len(), (TOPICS.len() * 3).div_ceil(5), "{p}");
    assert!(held.iter().all(|h| !trained.contains(h)));
    let (newest_trained, oldest_held) =
        (p["split"][0].as_u64().unwrap(), p["split"][1].as_u64().unwrap());
    assert!(newest_trained < oldest_held, "{p}");
    // The held-out commits' files, base against tuned.
    let commits = p["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["set"] == "newest commits → files")
        .unwrap_or_else(|| panic!("{p}"));
    let (base, tuned) = (commits["base"].as_f64().unwrap(), commits["tuned"].as_f64().unwrap());
    assert!(tuned > base, "the tuned model finds held-out commits' files better: {p}");
    assert_eq!(p["kept"], true, "{p}");
    assert!(p["id"].as_str().unwrap().starts_with("repo-tuned-"));
    // Written with its provenance, and it serves the repository.
    let info = sift_with_models().args(["model", "info", "--path"]).arg(root).output().unwrap();
    let info = stdout(&info);
    assert!(info.contains(".sift/models/tuned"), "{info}");
    assert!(info.contains("tuned on this repository on"), "{info}");
    let first = index_json(root);
    assert!(first.to_string().contains("repo-tuned-"), "indexing embeds with it: {first}");
    // The same tune again: the same model (same id), nothing to embed again.
    let again = tune(root, &["--json"]);
    let again: serde_json::Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(again["id"], p["id"], "deterministic");
    let second = index_json(root);
    assert_eq!(second["embeddings"]["embedded"], 0, "{second}");

    // Reset: the base model serves again, and its vectors are still there.
    let out = tune(root, &["--reset"]);
    assert!(
        stderr(&out).contains("the base model serves this repository again"),
        "{}",
        stderr(&out)
    );
    assert!(!root.join(".sift/models/tuned").exists());
    let info = sift_with_models().args(["model", "info", "--path"]).arg(root).output().unwrap();
    assert!(!stdout(&info).contains(".sift/models/tuned"), "{}", stdout(&info));
    let back = index_json(root);
    assert_eq!(back["embeddings"]["embedded"], 0, "the base model's vectors were kept: {back}");

    // The gate: a model trained zero epochs is the base model, no better anywhere: discarded,
    // with the figures shown, and nothing written.
    let out = tune(root, &["--epochs", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("discarded: no better than the base model"), "{err}");
    assert!(err.contains("newest commits → files"), "the figures are shown: {err}");
    assert!(!root.join(".sift/models/tuned").exists());
}
