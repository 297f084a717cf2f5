//! What the search asks of the proposers that read libtorch's answers (`rules::propose`):
//! handed in by the caller, so that the search imports none of them.
use std::time::Instant;

use super::candidates::{Checked, Learned};
use super::runner::Runner;
use super::InferConfig;
use crate::spec::ApiSpec;
use crate::wire::case::Arg;

/// Candidates learned by running the API or read off the search's rounds.
pub trait Proposers {
    /// The value sets of `api`'s open string parameters, learned by running it (no case
    /// starts after `deadline`); `index` is its index for the runner.
    fn learn_values(&self, api: &ApiSpec, index: usize, runner: &dyn Runner, config: &InferConfig, deadline: Instant) -> Vec<Learned>;

    /// A proposer for the rounds of one search, starting from nothing seen.
    fn for_rounds(&self) -> Box<dyn RoundProposer>;
}

/// Candidates read off each round's batch, from what libtorch said so far in one search.
pub trait RoundProposer {
    /// The candidates after a round of `api` (a changed one replaces its earlier version).
    fn after_round(&mut self, api: &ApiSpec, round: &Observed) -> Vec<Checked>;
}

/// What a round ran and what libtorch said.
pub struct Observed<'a> {
    pub args: &'a [Vec<Arg>],
    /// Per case: the first line of libtorch's message when it rejected the case.
    pub messages: &'a [Option<String>],
    /// One raw message of the round's most frequent complaint.
    pub dominant_message: Option<&'a str>,
}
