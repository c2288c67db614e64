//! Lines on standard error, and an error's message with its causes.

/// Writes one line to standard error.
pub fn line(text: &str) {
    eprintln!("{text}");
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
    out
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
