//! `sfz hunt script.py`: a user's PyTorch script traced under the venv's Python (`trace`), the
//! record lowered to a `program` the hunt runs (`lower`), and a finding mapped back to the
//! script's file and line (`site`).
pub mod lower;
pub mod site;
pub mod trace;
