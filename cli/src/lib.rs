//! The tools around the privlogit library: what the `privlogit` command line runs besides the
//! library's own jobs. Everything here may print, draw and show progress bars; the library
//! (`privlogit`) does none of that.
//!
//! - [`bench`]: `privlogit bench`, timings of the cryptographic layers, protocols and Nodes;
//! - [`reproduce`]: `privlogit reproduce`, the dissertation's Table 5.1 at the paper's sizes;
//! - [`experiments`]: `privlogit dp experiment`, the DP papers' experiments and their figures;
//! - [`figures`]: line and bar charts as SVG and PNG, through plotters;
//! - [`dl_runs`]: `privlogit dl`, distributed DP deep learning in one process or over TLS;
//! - [`account`]: `privlogit dp account`, what a sequence of releases spends, and Table 3.1.

pub mod account;
pub mod bench;
pub mod dl_runs;
pub mod experiments;
pub mod figures;
pub mod reproduce;
