//! The book (`docs/`) and the README hold together: every chapter SUMMARY.md names exists,
//! every relative link and anchor resolves, every `{{#include}}` names a file, the README stays
//! short, and no code comment points outside the repository. (A link checker in place of
//! building the book with mdbook, which would add minutes of build to every run.)

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut stack = vec![root().join("docs/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out
}

/// mdBook's anchor of a heading: lower case, spaces to '-', other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let title = h.trim_start_matches('#').trim();
            let mut a = anchor(title);
            // Repeated headings get -1, -2, ... as mdBook numbers them.
            let base = a.clone();
            let mut n = 1;
            while seen.contains(&a) {
                a = format!("{base}-{n}");
                n += 1;
            }
            seen.insert(a);
        }
    }
    seen
}

/// The `](target)` links of a markdown text, outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Leave inline code out.
        let plain: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_chapter_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    let summary = root().join("docs/src/SUMMARY.md");
    let summary_text = std::fs::read_to_string(&summary).expect("SUMMARY.md");
    for target in links(&summary_text) {
        if !root().join("docs/src").join(&target).exists() {
            broken.push(format!("SUMMARY.md names {target}, which does not exist"));
        }
    }
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("markdown");
        let dir = file.parent().expect("dir");
        for target in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            if !resolved.exists() {
                broken.push(format!(
                    "{}: link to {target}: no such file",
                    file.display()
                ));
                continue;
            }
            if !resolved.starts_with(root())
                || resolved
                    .canonicalize()
                    .is_ok_and(|p| !p.starts_with(root().canonicalize().expect("root")))
            {
                broken.push(format!(
                    "{}: link to {target} leaves the repository",
                    file.display()
                ));
            }
            if let Some(fragment) = fragment
                && resolved.extension().is_some_and(|e| e == "md")
            {
                let there = std::fs::read_to_string(&resolved).expect("target");
                if !anchors(&there).contains(fragment) {
                    broken.push(format!(
                        "{}: link to {target}: no such heading",
                        file.display()
                    ));
                }
            }
        }
        for line in text.lines() {
            if let Some(include) = line.trim().strip_prefix("{{#include ")
                && let Some(path) = include.strip_suffix("}}")
                && !dir.join(path.trim()).exists()
            {
                broken.push(format!(
                    "{}: include of {path}: no such file",
                    file.display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_readme_is_short() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .expect("README")
        .lines()
        .count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines (the book holds the rest)"
    );
}

/// Source comments point into the book, not outside the repository (the project's own
/// architecture is docs/src/architecture.md).
#[test]
fn no_comment_points_outside_the_repository() {
    let mut found = Vec::new();
    let mut stack: Vec<PathBuf> = [
        "src",
        "protocols/src",
        "circuits/src",
        "python/src",
        "python/privlogit",
        "python/tests",
        "tests",
        "benches",
        "examples",
        "circuits/benches",
        "protocols/benches",
    ]
    .iter()
    .map(|d| root().join(d))
    .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if !path
                .extension()
                .is_some_and(|e| e == "rs" || e == "py" || e == "pyi")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source");
            // Tests, benches and examples may read ../shared's data; the library may not. The
            // names are split so that this file does not find itself.
            let rel = relative(&path);
            let library = !(rel.starts_with("tests/")
                || rel.starts_with("python/tests/")
                || rel.starts_with("examples/")
                || rel.contains("benches/"));
            let guides = [concat!("ARCHITECTURE", ".md"), concat!("STYLE", ".md")];
            for (n, line) in text.lines().enumerate() {
                let outside = guides.iter().any(|f| line.contains(f))
                    || (library && line.contains(concat!("../", "shared")));
                if outside {
                    found.push(format!("{}:{}: {}", relative(&path), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The repository paths the book names in code spans (`src/dp/release.rs`, `cli/tests/suite/dp.rs`)
/// exist, so that its "adding a method" and "adding a protocol" lists, and every other pointer
/// into the code, stay true when files move. A path with a placeholder (`src/dp/NAME.rs`) is
/// left out; a path may be relative to its crate's folder (crates.md's rows are).
#[test]
fn every_file_the_book_names_exists() {
    const ROOTS: [&str; 9] = [
        "src/",
        "protocols/",
        "circuits/",
        "cli/",
        "python/",
        "docs/",
        "tests/",
        "scripts/",
        "benches/",
    ];
    const EXTENSIONS: [&str; 6] = [".rs", ".md", ".py", ".pyi", ".toml", ".sh"];
    let mut missing = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("markdown");
        for (i, span) in text.split('`').enumerate() {
            let named = i % 2 == 1
                && ROOTS.iter().any(|r| span.starts_with(r))
                && EXTENSIONS.iter().any(|e| span.ends_with(e))
                && !span.contains(char::is_whitespace)
                && !span.contains("NAME")
                && !span.contains('*');
            let exists = ["", "cli/", "python/", "protocols/", "circuits/"]
                .iter()
                .any(|krate| root().join(krate).join(span).exists());
            if named && !exists {
                missing.push(format!(
                    "{} names {span}, which does not exist",
                    file.display()
                ));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// One file name, one meaning: no two source files of the workspace's crates share a name
/// (a module's `mod.rs`, `lib.rs` and `main.rs` apart), so that a name in a stack trace, a
/// review or the book says which file it is. Tests and benchmarks are named after what they
/// exercise and are not counted.
#[test]
fn no_source_file_name_repeats() {
    let mut seen: std::collections::HashMap<String, Vec<PathBuf>> = Default::default();
    let mut stack: Vec<PathBuf> = [
        "src",
        "protocols/src",
        "circuits/src",
        "cli/src",
        "python/src",
    ]
    .iter()
    .map(|d| root().join(d))
    .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("source folder") {
            let path = entry.expect("entry").path();
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .to_string();
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".rs") && !["mod.rs", "lib.rs", "main.rs"].contains(&&*name) {
                seen.entry(name).or_default().push(path);
            }
        }
    }
    let repeated: Vec<String> = seen
        .into_iter()
        .filter(|(_, paths)| paths.len() > 1)
        .map(|(name, paths)| format!("{name}: {paths:?}"))
        .collect();
    assert!(
        repeated.is_empty(),
        "file names repeated:\n{}",
        repeated.join("\n")
    );
}
