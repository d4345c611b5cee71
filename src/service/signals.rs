//! Signals a Suricata service receives, and what picket does with them:
//!
//! | signal | sender | picket |
//! |---|---|---|
//! | `SIGTERM`, `SIGINT` | systemd stop, Ctrl-C | stop: drain, final stats, flush (a second one exits at once) |
//! | `SIGHUP` | logrotate `postrotate` | reopen every log file ([`LogReopen`]) |
//! | `SIGUSR2` | `ExecReload=`, Suricata's rule-reload habit | reload the rules (live runs) |
//!
//! Handlers only set flags or wake the signal thread (signal-hook's safe API); the
//! thread turns a signal into a [`Request`] on the control channel.

use super::{ControlSender, LogReopen, Request};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR2};
use signal_hook::iterator::{Handle, Signals};
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Exit status of the second SIGINT/SIGTERM (the shell's 128 + SIGINT).
const SECOND_SIGNAL_EXIT: i32 = 130;

/// SIGINT and SIGTERM set `stop`; a second one ends the process at once.
pub fn register_stop(stop: &Arc<AtomicBool>) -> io::Result<()> {
    for signal in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, SECOND_SIGNAL_EXIT, Arc::clone(stop))?;
        signal_hook::flag::register(signal, Arc::clone(stop))?;
    }
    Ok(())
}

/// The thread that turns SIGHUP and SIGUSR2 into requests. Dropping it stops the thread
/// (the signals then keep their handlers: they no longer end the process).
pub struct SignalThread {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl Drop for SignalThread {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts the signal thread. SIGHUP bumps `reopen` at once (the log writers reopen on
/// their next write or flush); SIGUSR2 queues [`Request::ReloadRules`] on `control`, or,
/// without a control channel (offline runs), is reported and ignored.
pub fn start(reopen: LogReopen, control: Option<ControlSender>) -> io::Result<SignalThread> {
    let mut signals = Signals::new([SIGHUP, SIGUSR2])?;
    let handle = signals.handle();
    let thread = std::thread::Builder::new().name("signals".into()).spawn(move || {
        for signal in signals.forever() {
            match signal {
                SIGHUP => reopen.bump(),
                SIGUSR2 => match &control {
                    Some(control) => {
                        if !control.notify(Request::ReloadRules) {
                            eprintln!("picket: SIGUSR2: a rule reload is already queued");
                        }
                    }
                    None => eprintln!("picket: SIGUSR2: rule reload applies to live runs; ignored"),
                },
                _ => {}
            }
        }
    })?;
    Ok(SignalThread { handle, thread: Some(thread) })
}
