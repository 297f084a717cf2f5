//! One pool thread's loop over its worker: keep up to `in_flight` cases queued in it, collect the
//! answers, and when it dies or hangs, blame the case the progress page names and send the rest
//! again to a replacement.
//!
//! One case in flight per worker caps it near 8k cases/s on pipe latency, hence the queue. A case
//! running past `timeout` gets its worker SIGKILLed and `TimedOut`; a worker that dies in a case
//! gets it `Crashed` or `Exited`.
use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::config::PoolConfig;
use super::forkserver::ForkServer;
use super::handle::{Event, Worker};
use super::pool::RunStats;
use super::process::describe;
use super::progress::{monotonic_ns, Running};
use super::protocol::Request;
use super::{Execution, EARLIER_CASES};
use crate::wire::case::Case;

/// Culprit-less deaths in a row after which a worker slot gives up.
const MAX_BLIND_DEATHS: u32 = 3;

/// Where the cases come from: called concurrently by every pool thread.
pub(super) type Next<'a> = &'a (dyn Fn() -> Option<(u64, Case)> + Sync);
/// Where the executions go: called concurrently by every pool thread.
pub(super) type Sink<'a> = &'a (dyn Fn(u64, &Case, Execution) + Sync);

/// One pool thread's state while it drives its worker slot.
pub(super) struct Drive<'a> {
    config: &'a PoolConfig,
    forkserver: Option<&'a Arc<ForkServer>>,
    next: Next<'a>,
    sink: Sink<'a>,
    stats: RunStats,
    /// Cases taken from `next` and not yet judged, oldest first.
    queue: VecDeque<(u64, Case)>,
    /// queue[..sent] went to the current worker; the rest waits for (re)sending.
    sent: usize,
    /// `next` has run dry.
    exhausted: bool,
    /// Deaths and protocol breaks in a row that no case could be blamed for.
    blind_deaths: u32,
    /// After a death, the cases re-sent to the replacement go one at a time, each answered
    /// before the next is sent. Answers travel in batches: a case that damaged the heap and
    /// returned may have lost its answer with the worker, and re-sent among others it would
    /// kill the next worker during a later, innocent case, again and again, unblamed.
    careful: usize,
    /// The cases the current worker answered last, handed over with its death.
    earlier: VecDeque<(u64, Case)>,
}

impl<'a> Drive<'a> {
    pub(super) fn new(config: &'a PoolConfig, forkserver: Option<&'a Arc<ForkServer>>, next: Next<'a>, sink: Sink<'a>) -> Drive<'a> {
        Drive {
            config,
            forkserver,
            next,
            sink,
            stats: RunStats::default(),
            queue: VecDeque::new(),
            sent: 0,
            exhausted: false,
            blind_deaths: 0,
            careful: 0,
            earlier: VecDeque::new(),
        }
    }

    /// Runs until `next` is dry and every case it gave has an execution, or the slot gives up.
    pub(super) fn run(mut self, slot: &mut Option<Worker>) -> RunStats {
        loop {
            if slot.is_none() && !self.restart(slot) {
                return self.stats;
            }
            let Some(worker) = slot.as_mut() else { continue };
            let failed = self.send(worker);
            if self.queue.is_empty() {
                return self.stats;
            }
            let event = if failed || worker.flush().is_err() { Event::Died } else { worker.wait_answer(self.config.timeout) };
            let settled = match event {
                Event::Answer(id, exec) => self.answered(slot, id, exec),
                Event::Protocol(message) => {
                    self.stats.errors.push(format!("worker broke the protocol: {message}; restarting it"));
                    self.blind_deaths += 1;
                    retire(slot);
                    true
                }
                Event::TimedOut(culprit) => self.timed_out(slot, culprit),
                Event::Died => self.died(slot),
            };
            if settled && self.blind_deaths >= MAX_BLIND_DEATHS {
                self.stats.errors.push(format!("giving up on a worker after {} deaths outside any case", self.blind_deaths));
                self.stats.unrun += self.queue.len() as u64;
                retire(slot);
                return self.stats;
            }
        }
    }

    /// Starts a worker in the empty slot. False when none would start: the queued cases never run.
    fn restart(&mut self, slot: &mut Option<Worker>) -> bool {
        let t = Instant::now();
        // A restart can fail for passing reasons (fork's EAGAIN, memory pressure right after an
        // out-of-memory case); try a few times before giving the slot up.
        let mut attempt = Worker::start(self.config, self.forkserver);
        for pause in [50, 500] {
            if attempt.is_ok() {
                break;
            }
            thread::sleep(Duration::from_millis(pause));
            attempt = Worker::start(self.config, self.forkserver);
        }
        match attempt {
            Ok((w, _)) => {
                *slot = Some(w);
                self.stats.restarts += 1;
                self.stats.respawn += t.elapsed();
                self.sent = 0;
                self.careful = self.queue.len();
                self.earlier.clear();
                true
            }
            Err(e) => {
                self.stats.errors.push(format!("cannot restart a worker: {e}"));
                self.stats.unrun += self.queue.len() as u64;
                false
            }
        }
    }

    /// Sends what the current worker has not seen, then tops the queue up. True when a write
    /// failed (the worker is dead).
    fn send(&mut self, worker: &mut Worker) -> bool {
        let mut failed = false;
        let window = if self.careful > 0 { 1 } else { self.queue.len() };
        while self.sent < window && !failed {
            let (id, case) = &self.queue[self.sent];
            failed = worker.send(&Request::Run { id: *id, case: case.clone() }).is_err();
            self.sent += 1;
        }
        // Refill in batches, once the queue is half empty: requests go out many per write and
        // the worker, which flushes when its input runs dry, answers many per write, instead
        // of one wake-up per case on each side. Half the window stays queued meanwhile.
        let in_flight = self.config.in_flight.max(1);
        let refill = self.careful == 0 && self.queue.len() <= in_flight / 2;
        while refill && !failed && !self.exhausted && self.queue.len() < in_flight {
            match (self.next)() {
                Some((id, case)) => {
                    failed = worker.send(&Request::Run { id, case: case.clone() }).is_err();
                    self.queue.push_back((id, case));
                    self.sent += 1;
                }
                None => self.exhausted = true,
            }
        }
        failed
    }

    /// The answer to case `id`. False when it came out of order: the worker is retired and the
    /// turn ends before the give-up check.
    fn answered(&mut self, slot: &mut Option<Worker>, id: u64, exec: Execution) -> bool {
        match self.queue.front() {
            Some((head, _)) if *head == id => {}
            _ => {
                self.stats.errors.push(format!("worker answered case {id} out of order; restarting it"));
                self.blind_deaths += 1;
                retire(slot);
                return false;
            }
        }
        if let Some((id, case)) = self.queue.pop_front() {
            self.sent -= 1;
            self.careful = self.careful.saturating_sub(1);
            self.blind_deaths = 0;
            self.stats.cases += 1;
            self.stats.completed += 1;
            (self.sink)(id, &case, exec);
            if self.earlier.len() == EARLIER_CASES {
                self.earlier.pop_front();
            }
            self.earlier.push_back((id, case));
        }
        true
    }

    /// The worker ran past the timeout in `culprit` (None: stalled between cases): killed, and
    /// its case judged `TimedOut`.
    fn timed_out(&mut self, slot: &mut Option<Worker>, culprit: Option<Running>) -> bool {
        let Some(mut w) = slot.take() else { return false };
        w.kill();
        let _ = w.reap();
        let millis = culprit.map_or(0, |r| monotonic_ns().saturating_sub(r.since_ns) / 1_000_000);
        match culprit.and_then(|r| self.queue.iter().position(|(id, _)| *id == r.id)) {
            Some(pos) => {
                if let Some((id, case)) = self.queue.remove(pos) {
                    self.stats.cases += 1;
                    self.stats.timed_out += 1;
                    (self.sink)(id, &case, in_phase(culprit, Execution::TimedOut { millis }));
                }
            }
            None => {
                self.blind_deaths += 1;
                self.stats.errors.push("a worker stalled outside any case; restarting it".into());
            }
        }
        true
    }

    /// The worker died: the case it was running, or the one whose answer it had not yet sent,
    /// is judged `Crashed` or `Exited` with the cases it answered before.
    fn died(&mut self, slot: &mut Option<Worker>) -> bool {
        let Some(mut w) = slot.take() else { return false };
        let culprit = w.progress.running();
        // Dead between cases, before the last one's answer went out: that call returned and the
        // damage it did to the heap was noticed at a later free. Re-sent, it would kill each
        // replacement the same way, unblamed.
        let suspect = culprit.map(|r| r.id).or_else(|| w.progress.finished());
        let (status, stderr) = w.reap_dying();
        let position = suspect.and_then(|s| self.queue.iter().position(|(id, _)| *id == s));
        match (position, status) {
            (Some(pos), Some(status)) => {
                if let Some((id, case)) = self.queue.remove(pos) {
                    self.stats.cases += 1;
                    let earlier = self.earlier.iter().cloned().collect();
                    let exec = match (status.signal(), status.code()) {
                        (Some(signal), _) => {
                            self.stats.crashed += 1;
                            let taken = super::frames::take(&stderr);
                            Execution::Crashed { signal, stderr: taken.stderr, frames: taken.frames, between_calls: taken.between_calls, earlier }
                        }
                        (None, code) => {
                            self.stats.exited += 1;
                            Execution::Exited { code: code.unwrap_or(-1), stderr, earlier }
                        }
                    };
                    (self.sink)(id, &case, in_phase(culprit, exec));
                }
            }
            // The fork server died before it could tell how the worker ended: run the case again
            // on a spawned worker rather than guess.
            (Some(_), None) => {
                self.blind_deaths += 1;
                self.stats.errors.push("a forked worker died after its fork server; running its case again".into());
            }
            (None, status) => {
                self.blind_deaths += 1;
                self.stats.errors.push(format!("a worker died outside any case ({}): {}", describe(status.as_ref()), last_line(&stderr)));
            }
        }
        true
    }
}

/// A death or hang during a differential check is the check's, not the call's.
fn in_phase(running: Option<Running>, failure: Execution) -> Execution {
    match running {
        Some(r) if r.phase > 0 => Execution::InCheck { check: (r.phase - 1) as u32, failure: Box::new(failure) },
        _ => failure,
    }
}

/// Kills the slot's worker so that the next turn of the driving loop starts a fresh one.
fn retire(slot: &mut Option<Worker>) {
    if let Some(mut w) = slot.take() {
        w.kill();
        let _ = w.reap();
    }
}

fn last_line(s: &str) -> &str {
    s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("")
}
