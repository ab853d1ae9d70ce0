//! Patches: changes to an engine's source on a host, made an experiment's arm
//! (#52). What is here so far is the diff itself: read from what `diff -u` or
//! `git diff` prints, checked for paths that leave where they point, made
//! from edited lines, and applied to a file's text by context.

pub mod diff;
