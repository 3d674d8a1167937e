//! The library's folders are rooms without circles: inside each folder of
//! `toolfunc/src`, no file (or subfolder) imports one that imports it back, however
//! far round. A file named for one job stands above what it uses, so a reader finds
//! the floors by following the imports down.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The source of every `.rs` file under `dir`, with its depth below `dir`.
fn sources(dir: &Path, depth: usize, out: &mut Vec<(usize, String)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, depth + 1, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((depth, code_of(&path)));
        }
    }
}

/// A file's code without comments and without its unit tests.
fn code_of(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let text = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `code` names `word` right after `prefix` (as `prefix word` or inside a
/// `prefix{…}` group).
fn names(code: &str, prefix: &str, word: &str) -> bool {
    code.match_indices(prefix).any(|(at, _)| {
        let before_ok = code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident(c) && c != ':');
        let after = &code[at + prefix.len()..];
        if !before_ok {
            return false;
        }
        if let Some(tail) = after.strip_prefix(word)
            && !tail.starts_with(is_ident)
        {
            return true;
        }
        after.strip_prefix('{').is_some_and(|group| {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            group.split(|c: char| !is_ident(c)).any(|name| name == word)
        })
    })
}

/// The imports between the rooms of `dir` (its files and subfolders, `mod.rs`
/// aside): room -> the rooms it names.
fn edges(dir: &Path, crate_path: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut rooms: BTreeMap<String, PathBuf> = BTreeMap::new();
    for entry in fs::read_dir(dir).expect("the folder reads").flatten() {
        let path = entry.path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        if path.is_dir() || (path.extension().is_some_and(|e| e == "rs") && name != "mod") {
            rooms.insert(name, path);
        }
    }
    let mut edges = BTreeMap::new();
    for (room, path) in &rooms {
        let mut files = Vec::new();
        if path.is_dir() {
            sources(path, 1, &mut files);
        } else {
            files.push((0, code_of(path)));
        }
        let mut named = BTreeSet::new();
        for other in rooms.keys().filter(|other| *other != room) {
            let hit = files.iter().any(|(depth, code)| {
                let up = "super::".repeat(depth + 1);
                names(code, &up, other) || names(code, &format!("crate::{crate_path}::"), other)
            });
            if hit {
                named.insert(other.clone());
            }
        }
        edges.insert(room.clone(), named);
    }
    edges
}

/// A circle among `edges`, if there is one, as the rooms on it.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        room: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|r| r == room) {
            return Some(path[at..].to_vec());
        }
        if done.contains(room) {
            return None;
        }
        path.push(room.to_owned());
        for next in edges.get(room).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(room.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|room| visit(room, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_folder_of_the_library_has_an_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("toolfunc/src");
    let mut folders = vec![src.clone()];
    let mut circles = Vec::new();
    while let Some(dir) = folders.pop() {
        for entry in fs::read_dir(&dir).expect("the folder reads").flatten() {
            if entry.path().is_dir() {
                folders.push(entry.path());
            }
        }
        if dir == src {
            // Between the top-level modules the shared layering check judges,
            // through the crate root's re-exports too.
            continue;
        }
        let crate_path = dir
            .strip_prefix(&src)
            .expect("below the source")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("::");
        if let Some(found) = circle(&edges(&dir, &crate_path)) {
            circles.push(format!(
                "{crate_path}: {} -> {}",
                found.join(" -> "),
                found[0]
            ));
        }
    }
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let mut edges = BTreeMap::new();
    edges.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    edges.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    edges.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(circle(&edges).map(|c| c.len()), Some(3));
    edges.insert("c".to_owned(), BTreeSet::new());
    assert_eq!(circle(&edges), None);
    assert!(names("use super::{ask, tasks};", "super::", "tasks"));
    assert!(names("super::server::Server", "super::", "server"));
    assert!(!names("super::servers::X", "super::", "server"));
    assert!(!names("use super::super::x::Y;", "super::", "x"));
}
