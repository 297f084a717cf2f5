//! What happens after a detection, beside the campaign: a worker's death confirmed alone in a
//! fresh worker (`alone`), an unconfirmed one traced to the earlier case that did the damage
//! (`culprit`), a hang explained by the cost of its input (`cost`), a finding shrunk (`shrink`)
//! and its input probed for a death of the same defect (`also_dies`). The campaign's queue of
//! this work is `fuzz::worklist`; `sfz replay` runs a finding alone as confirmation does.
pub mod alone;
pub mod also_dies;
pub mod cost;
pub mod culprit;
pub mod shrink;
