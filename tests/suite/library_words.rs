//! The library crates name no command-line flag: their messages and help name a setting as
//! ``setting `max_iter` `` and each front end spells it in its own words (the command line as
//! `--max-iter`, Python as its keyword; `privlogit::settings::words`). This test reads every
//! string literal of `src/`, `protocols/src` and `circuits/src` and refuses one that holds
//! `--` followed by a letter or a format argument. It also checks that the library prints
//! nothing.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The contents of every string literal of `source` (plain, byte and raw), skipping comments
/// and character literals.
fn string_literals(source: &str) -> Vec<&str> {
    let bytes = source.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(raw) = raw_opening(rest).filter(|_| i == 0 || !is_ident(bytes[i - 1])) {
            let (open, hashes) = raw;
            let close = format!("\"{}", "#".repeat(hashes));
            let body = &rest[open..];
            let end = body.find(&close).unwrap_or(body.len());
            found.push(&body[..end]);
            i += open + end + close.len();
        } else if bytes[i] == b'\'' {
            // A character literal ('a', '\n', '"'), else a lifetime.
            let b = &bytes[i..];
            i += match b {
                [_, b'\\', _, b'\'', ..] => 4,
                [_, b'\\', ..] => b
                    .iter()
                    .skip(2)
                    .position(|&c| c == b'\'')
                    .map_or(1, |p| p + 3),
                [_, _, b'\'', ..] => 3,
                _ => 1,
            };
        } else if bytes[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            found.push(&source[start..j.min(bytes.len())]);
            i = j + 1;
        } else {
            i += 1;
        }
    }
    found
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `r"`, `r#"`, `br"`...: the opening's length and its number of `#`.
fn raw_opening(text: &str) -> Option<(usize, usize)> {
    let after_b = text.strip_prefix('b').unwrap_or(text);
    let after_r = after_b.strip_prefix('r')?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    after_r[hashes..]
        .starts_with('"')
        .then(|| (text.len() - after_r.len() + hashes + 1, hashes))
}

fn names_a_flag(literal: &str) -> bool {
    let b = literal.as_bytes();
    (0..b.len().saturating_sub(2)).any(|k| {
        b[k] == b'-'
            && b[k + 1] == b'-'
            && (b[k + 2].is_ascii_lowercase() || b[k + 2] == b'{')
            && (k == 0 || !(b[k - 1] == b'-' || is_ident(b[k - 1])))
    })
}

#[test]
fn no_library_string_names_a_command_line_flag() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "protocols/src", "circuits/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut offending = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("source");
        for literal in string_literals(&source) {
            if names_a_flag(literal) {
                offending.push(format!("{}: {literal:?}", file.display()));
            }
        }
    }
    assert!(
        offending.is_empty(),
        "library strings naming a flag (write setting `key` instead):\n{}",
        offending.join("\n")
    );
}

/// The library prints nothing: its code outside `#[cfg(test)]` modules has no `print!`,
/// `println!`, `eprint!`, `eprintln!` or handle on the standard streams (results, progress and
/// warnings go to the caller, which writes them where its users look).
#[test]
fn the_library_prints_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "protocols/src", "circuits/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let printing = [
        "print!(",
        "println!(",
        "eprint!(",
        "eprintln!(",
        "io::stdout()",
        "io::stderr()",
    ];
    let mut offending = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("source");
        // Test modules close their file (the project's layout): the code before the first.
        let code = source.split("#[cfg(test)]\nmod ").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            if printing.iter().any(|p| line.contains(p)) {
                offending.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(
        offending.is_empty(),
        "the library writes to the standard streams:\n{}",
        offending.join("\n")
    );
}

#[test]
fn the_scanner_finds_literals_and_skips_comments() {
    let source =
        "// \"--no\"\nlet a = \"--yes\"; let c = '\"'; let r = r#\"x \"--raw\"\"#; /* \"--no\" */";
    let literals = string_literals(source);
    assert_eq!(literals, vec!["--yes", "x \"--raw\""]);
    assert!(names_a_flag("give --lambda 0"));
    assert!(names_a_flag("--{name}"));
    assert!(!names_a_flag("a -- b, x--y, ---"));
}

/// Errors carry values a caller can match, not sentences built where they are raised (issue
/// 52: at most 100 such constructions in the library crates; about 450 before it). A
/// construction is `SomeError::Variant(..)` or `{ .. }` (or a constructor function of an error
/// type, or of a payload enum such as `Breach`) whose arguments build a `String` with
/// `format!`, `String::from("..")` or a literal's `.into()`/`.to_string()`/`.to_owned()`.
/// Data a user gave (a column's name) converted with `.to_string()` does not count.
#[test]
fn errors_are_built_from_values_not_sentences() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "protocols/src", "circuits/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut built = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("source");
        let code = source.split("#[cfg(test)]\nmod ").next().unwrap_or("");
        for (at, kind) in string_built_errors(code) {
            let line = code[..at].lines().count();
            built.push(format!("{}:{line}: {kind}", file.display()));
        }
    }
    assert!(
        built.len() <= 100,
        "{} errors built from strings (at most 100):\n{}",
        built.len(),
        built.join("\n")
    );
}

/// The payload enums of the error types, matched like them.
const ERROR_PAYLOADS: [&str; 5] = [
    "Breach",
    "Overflow",
    "PlanReason",
    "SettingProblem",
    "Refusal",
];

/// Where `code` constructs an error from a built string: (byte offset, `Type::Variant`).
fn string_built_errors(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find("::") {
        let sep = from + k;
        from = sep + 2;
        let start = code[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |p| p + 1);
        let ty = &code[start..sep];
        let is_error = (ty.ends_with("Error") && !code[..start].ends_with("io::"))
            || ERROR_PAYLOADS.contains(&ty);
        if !is_error {
            continue;
        }
        let name_end = code[from..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(code.len(), |p| from + p);
        let open = code[name_end..].trim_start();
        let Some(opening) = open.chars().next().filter(|c| *c == '(' || *c == '{') else {
            continue;
        };
        let body_start = code.len() - open.len() + 1;
        let (mut depth, mut end) = (1, body_start);
        while depth > 0 && end < bytes.len() {
            match bytes[end] {
                b'(' | b'{' | b'[' => depth += 1,
                b')' | b'}' | b']' => depth -= 1,
                _ => {}
            }
            end += 1;
        }
        let body = &code[body_start..end.saturating_sub(1)];
        let is_pattern =
            code[end..].trim_start().starts_with("=>") || code[..start].trim_end().ends_with("fn");
        let _ = opening;
        if !is_pattern && builds_a_string(body) {
            found.push((start, format!("{ty}::{}", &code[from..name_end])));
        }
    }
    found
}

fn builds_a_string(body: &str) -> bool {
    body.contains("format!(")
        || body.contains("String::from(\"")
        || ["\".into()", "\".to_string()", "\".to_owned()"]
            .iter()
            .any(|p| body.contains(p))
}

#[test]
fn the_error_scanner_finds_built_messages_only() {
    let code = "Err(SecureError::violation(Role::Node, format!(\"x {n}\")));\n\
                Err(DataError::UnknownColumn { column: name.to_string() });\n\
                Err(PlanError::Missing(\"why\".into()));\n\
                match e { SecureError::Io { .. } => {} }\n\
                std::io::Error::other(format!(\"y\"));";
    let found: Vec<String> = string_built_errors(code)
        .into_iter()
        .map(|(_, k)| k)
        .collect();
    assert_eq!(found, ["SecureError::violation", "PlanError::Missing"]);
}
