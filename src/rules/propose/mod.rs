//! Where candidate rules come from: offline from parameter types (`enumerate`), from a language
//! model (`llm`), metamorphic relations (`relations`), and from libtorch's own answers during
//! `sfz infer` (`enums` learns string value sets, `kernels` the dtypes a kernel refused, `stated`
//! the values a message states), which reach the search through `FromErrors`. Proposers depend
//! on the inference core (`infer`), never the other way round.
pub mod enumerate;
pub mod enums;
mod kernels;
pub mod llm;
pub mod relations;
mod stated;

use std::time::Instant;

use super::infer::{Checked, InferConfig, Learned, Observed, Proposers, RoundProposer, Runner};
use crate::spec::ApiSpec;

/// The proposers that read libtorch's errors: value sets learned by running (`enums`), and per
/// round the dtypes refused (`kernels`) and the values stated (`stated`).
pub struct FromErrors;

impl Proposers for FromErrors {
    fn learn_values(&self, api: &ApiSpec, index: usize, runner: &dyn Runner, config: &InferConfig, deadline: Instant) -> Vec<Learned> {
        enums::learn(api, index, runner, config, deadline)
    }

    fn for_rounds(&self) -> Box<dyn RoundProposer> {
        Box::new(FromMessages::default())
    }
}

/// One search's reader of round messages: the dtypes refused so far, and what the most frequent
/// complaint states.
#[derive(Default)]
struct FromMessages {
    refused: kernels::Refused,
}

impl RoundProposer for FromMessages {
    fn after_round(&mut self, api: &ApiSpec, round: &Observed) -> Vec<Checked> {
        // The dtypes the kernels refused so far, as one candidate per parameter; a larger set
        // replaces its earlier version.
        self.refused.observe(api, round.args, round.messages);
        // And what the most frequent complaint states: a number parameter's values, a last
        // dimension's size (`stated`).
        let stated = round.dominant_message.map_or_else(Vec::new, |m| stated::candidates(api, m));
        self.refused.candidates(api).into_iter().chain(stated).collect()
    }
}
