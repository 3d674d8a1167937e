//! The README is the front door: what toolfunc is, how to install it, and one short
//! example per surface with its link to docs.rs. The depth (every key, each wire,
//! every default) lives in the API documentation, `toolfunc/src/docs/*.md`, so the
//! README stays within a fixed number of lines.

/// The most lines README.md may have.
const MAX_LINES: usize = 250;

#[test]
fn readme_stays_short() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).expect("README.md can be read");
    let lines = readme.lines().count();
    assert!(
        lines <= MAX_LINES,
        "README.md has {lines} lines, more than {MAX_LINES}: the depth belongs on docs.rs. \
         Move it into the API documentation (toolfunc/src/docs/*.md, included into the \
         crate's docs) and keep in the README one short example per surface with its link."
    );
}
