//! The library's integration tests in one test binary, a module per concern (one link and one
//! instantiation of the library's generic code, one pool of test threads). The helpers in
//! `tests/common` are shared with the command line's suite (`cli/tests/suite`).

#[path = "../common/mod.rs"]
mod common;

mod book;
mod divergence;
mod glm;
mod library_words;
mod optimizers;
mod resume;
