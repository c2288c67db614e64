//! Progress lines: the one type through which every job and role reports as it goes.

/// Where a role's progress and notices go, one line at a time (standard error on the command
/// line, prefixed with the study's label when a server serves several).
pub type Say<'a> = &'a (dyn Fn(&str) + Sync);
