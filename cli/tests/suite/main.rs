//! The integration tests of the command line and of the library through it, in one test
//! binary: each file is a module. One binary links the library once and instantiates its
//! generic protocol code once (eighteen binaries did it eighteen times), and its tests share
//! one pool of threads, so a long test no longer leaves a core idle at the end of its file.
//! Each test's files live in its own temporary directory (named after the test), and no test
//! changes the process's environment or working directory.

mod common;

mod circuit_cli;
mod cli;
mod dealer;
mod dl_cli;
mod dp;
mod dp_accounting;
mod dp_cli;
mod dphtl;
mod evaluation;
mod inference;
mod ledger_cases;
mod operations;
mod reproduce_cli;
mod safe_publish;
mod secure_plr;
mod secure_protocols;
mod streaming;
mod study_cli;
mod vertical;
