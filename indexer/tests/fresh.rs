//! The quick freshness check (`sift_indexer::fresh`): after a full walk, a search re-reads what
//! changed without walking the tree, and every kind of change is still seen.

use std::path::Path;
use std::time::{Duration, SystemTime};

use sift_indexer::fresh::Freshness;
use sift_indexer::{CodeIndex, NoProgress, STORE_ENTRIES, SearchOptions, Store, UpdateOptions};

fn set_time(path: &Path, secs_ago: u64) {
    let past = SystemTime::now() - Duration::from_secs(secs_ago);
    let file = if path.is_dir() {
        std::fs::File::open(path).unwrap()
    } else {
        std::fs::File::options().write(true).open(path).unwrap()
    };
    file.set_modified(past).unwrap();
}

/// Every file and folder under `root` (but `.sift`) an hour old: times within two seconds of
/// an update are not trusted, by design, so a fresh tree would always be walked.
fn age_all(root: &Path) {
    fn visit(dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".sift") {
                continue;
            }
            if path.is_dir() {
                visit(&path);
            }
            set_time(&path, 3600);
        }
    }
    visit(root);
    set_time(root, 3600);
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn opts() -> UpdateOptions {
    UpdateOptions { threads: 2, ..UpdateOptions::default() }
}

fn indexed_tree() -> (tempfile::TempDir, CodeIndex) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/lib.rs", "pub fn load_settings() {}\n");
    write(root, "src/net/client.rs", "pub struct HttpClient;\n");
    write(root, "app/views.py", "def render_page(request):\n    return 'page'\n");
    write(root, ".gitignore", "build/\n");
    write(root, "build/out.rs", "pub fn generated_thing() {}\n");
    age_all(root);
    let store = Store::open(root, &[STORE_ENTRIES]).unwrap();
    let (index, _) = CodeIndex::open_or_create(&store).unwrap();
    // Creating `.sift/` changed the root's time.
    set_time(root, 3600);
    index.update(&opts(), &NoProgress).unwrap();
    (dir, index)
}

fn files(index: &CodeIndex, query: &str) -> Vec<String> {
    let hits = index.search(query, &SearchOptions::top(20)).unwrap();
    let mut paths: Vec<String> = hits.into_iter().map(|h| h.path).collect();
    paths.dedup();
    paths
}

fn check(index: &CodeIndex) -> Freshness {
    index.quick_check(&opts().config).unwrap()
}

#[test]
fn an_unchanged_tree_is_fresh_without_a_walk() {
    let (_dir, index) = indexed_tree();
    assert_eq!(check(&index), Freshness::Fresh);
    let report = index.refresh(&opts(), &NoProgress).unwrap();
    assert!(!report.changed_anything());
    assert_eq!(report.files_total, 4);
}

#[test]
fn a_file_changed_in_place_is_seen_and_only_it_is_reread() {
    let (dir, index) = indexed_tree();
    let root = dir.path();
    // An in-place write: the folder's time does not change, only the file's.
    write(root, "src/lib.rs", "pub fn load_settings() {}\npub fn parse_manifest_quickly() {}\n");
    set_time(&root.join("src/lib.rs"), 60);
    assert_eq!(check(&index), Freshness::Changed(vec![root.join("src/lib.rs")]));
    let report = index.refresh(&opts(), &NoProgress).unwrap();
    assert_eq!((report.changed, report.added, report.removed), (1, 0, 0));
    assert_eq!(files(&index, "parse_manifest_quickly"), ["src/lib.rs"]);
    // The stamp follows the new commit: the next search is quick again.
    assert_eq!(check(&index), Freshness::Fresh);
    // Same size, new time: re-read (and found unchanged), as a full walk would.
    set_time(&root.join("app/views.py"), 30);
    assert_eq!(check(&index), Freshness::Changed(vec![root.join("app/views.py")]));
}

#[test]
fn added_removed_and_renamed_files_change_a_folder_and_walk() {
    let (dir, index) = indexed_tree();
    let root = dir.path();
    write(root, "src/net/server.rs", "pub fn accept_connections_now() {}\n");
    assert_eq!(check(&index), Freshness::Walk("a directory changed"));
    index.refresh(&opts(), &NoProgress).unwrap();
    assert_eq!(files(&index, "accept_connections_now"), ["src/net/server.rs"]);

    std::fs::rename(root.join("app/views.py"), root.join("app/pages.py")).unwrap();
    assert!(matches!(check(&index), Freshness::Walk(_)));
    index.refresh(&opts(), &NoProgress).unwrap();
    assert_eq!(files(&index, "render_page"), ["app/pages.py"]);

    std::fs::remove_file(root.join("src/net/client.rs")).unwrap();
    index.refresh(&opts(), &NoProgress).unwrap();
    assert!(files(&index, "HttpClient").is_empty());
}

#[test]
fn an_edited_ignore_file_walks_and_applies_the_new_rules() {
    let (dir, index) = indexed_tree();
    let root = dir.path();
    assert!(files(&index, "generated_thing").is_empty());
    write(root, ".gitignore", "target/\n");
    set_time(&root.join(".gitignore"), 60);
    assert_eq!(check(&index), Freshness::Walk("an ignore file changed"));
    index.refresh(&opts(), &NoProgress).unwrap();
    assert_eq!(files(&index, "generated_thing"), ["build/out.rs"]);
}

#[test]
fn other_walking_rules_or_a_missing_stamp_walk() {
    let (dir, index) = indexed_tree();
    let mut other = opts().config;
    other.max_file_size = 10;
    assert!(matches!(index.quick_check(&other).unwrap(), Freshness::Walk(_)));
    std::fs::remove_file(dir.path().join(".sift/index").join(sift_indexer::fresh::STAMP_FILE))
        .unwrap();
    assert!(matches!(check(&index), Freshness::Walk(_)));
    // A full update writes it again.
    index.update(&opts(), &NoProgress).unwrap();
    assert_eq!(check(&index), Freshness::Fresh);
}
