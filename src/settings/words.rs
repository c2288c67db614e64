//! How a message names a setting, and how a front end spells it in its own words.
//!
//! The library's messages and help never name a command-line flag: they name a setting as
//! ``setting `max_iter` `` (its study-file key), which reads the same to a Rust caller, in a
//! study file and in Python. A front end rewrites those mentions once, where it prints: the
//! command line as its flag, Python as its keyword (`lam` for `lambda`).

/// What introduces a setting's key in a message.
const MARK: &str = "setting `";

/// `text` with every ``setting `key` `` replaced by `spell(key)`.
pub fn spell_settings(text: &str, spell: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let after = &rest[at + MARK.len()..];
        let Some(end) = after.find('`') else { break };
        let key = &after[..end];
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            out.push_str(&rest[..at + MARK.len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        out.push_str(&spell(key));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_spelled_and_the_rest_stays() {
        let text =
            "raise setting `max_iter` (now 5); column `label` is missing; setting `Weird` kept";
        let upper = |key: &str| key.to_uppercase();
        assert_eq!(
            spell_settings(text, upper),
            "raise MAX_ITER (now 5); column `label` is missing; setting `Weird` kept"
        );
        assert_eq!(spell_settings("setting `", upper), "setting `");
        assert_eq!(spell_settings("", upper), "");
    }
}
