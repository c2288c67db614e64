//! Lines on standard error, each prefixed with the study it belongs to when one process serves
//! several studies at once (`keyholder` or `aggregator` with several `--study` files).

use std::cell::RefCell;

thread_local! {
    static PREFIX: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Prefixes this thread's lines with `[label] `.
pub fn set_study(label: &str) {
    PREFIX.with(|p| *p.borrow_mut() = format!("[{label}] "));
}

/// Writes one line to standard error with this thread's prefix.
pub fn line(text: &str) {
    PREFIX.with(|p| eprintln!("{}{text}", p.borrow()));
}

/// `eprintln!` with the thread's study prefix.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::log::line(&format!($($arg)*))
    };
}
pub(crate) use say;
