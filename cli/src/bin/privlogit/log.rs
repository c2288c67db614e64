//! Lines on standard error, and an error's message with its causes, in the command line's
//! words: the library names a setting as ``setting `max_iter` ``, printed here as `--max-iter`.

use privlogit::settings::words::spell_settings;

/// `text` with the library's mentions of settings as flags: `max_iter` as `--max-iter`.
pub fn in_flags(text: &str) -> String {
    spell_settings(text, |key| format!("--{}", key.replace('_', "-")))
}

/// Writes one line to standard error.
pub fn line(text: &str) {
    eprintln!("{}", in_flags(text));
}

/// `eprintln!` for progress and notices.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::log::line(&format!($($arg)*))
    };
}
pub(crate) use say;

/// `e` and its causes joined by ": ", as anyhow's `{:#}` does, leaving out a cause whose text
/// the message already carries (errors that print their source in their own message, such as
/// a file's name and the operating system's reason, would otherwise say it twice).
pub fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    in_flags(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(io)
            .context("a.csv: no such file")
            .context("loading party 1");
        assert_eq!(message(&e), "loading party 1: a.csv: no such file");
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(message(&plain), "outer: inner");
    }
}
