//! What a fit shows while it runs: the library's warnings on stderr (one line each, always),
//! its per-iteration `tracing` events too with `--verbose`, and a progress bar on stderr when
//! stderr is a terminal.
//!
//! The bar is driven by the fits' `on_iteration` callback (iteration / max_iter, the restart
//! and the objective) and cleared when the fit ends. It never appears with `--json` or when
//! stderr is a file or a pipe (tests, scripts): [`shows_bar`] is the one place that decides.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use wgpu_unsupervised::OnIteration;

/// Sends this crate's WARN events (a choice the library made for the user, such as one run
/// for given centroids or whitening at the noise floor) to stderr, one line each; with
/// `verbose`, its DEBUG and INFO events too (one per iteration, one per fit).
pub fn show_events(verbose: bool) {
    let to_stderr = || {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
    };
    // Only `main` calls this, once; a second subscriber could only come from a bug.
    let _ = if verbose {
        let filter = Targets::new().with_target("wgpu_unsupervised", LevelFilter::DEBUG);
        tracing_subscriber::registry()
            .with(to_stderr())
            .with(filter)
            .try_init()
    } else {
        // One plain line per warning: "WARN <message>".
        let filter = Targets::new().with_target("wgpu_unsupervised", LevelFilter::WARN);
        tracing_subscriber::registry()
            .with(to_stderr().without_time().with_target(false))
            .with(filter)
            .try_init()
    };
}

/// Whether a progress bar is drawn: never with `--json`, and only on a terminal.
pub fn shows_bar(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// A progress bar for a fit of at most `max_iter` iterations per restart, driven by the
/// fit's `on_iteration` callback; cleared by [`Bar::clear`] or when dropped.
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// When [`shows_bar`] says so, a bar for `what` ("k-means", "EM", "power iteration")
    /// whose callback is put in `slot` (the parameters' `on_iteration`); nothing is drawn
    /// before the first iteration.
    pub fn attach(
        json: bool,
        what: &'static str,
        max_iter: usize,
        slot: &mut Option<OnIteration>,
    ) -> Option<Self> {
        if !shows_bar(json) {
            return None;
        }
        let bar = ProgressBar::new(max_iter as u64);
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(what);
        let driven = bar.clone();
        let callback = OnIteration::new(move |it| {
            driven.set_position(it.iteration as u64);
            driven.set_message(format!(
                "run {}, objective {:.6e}",
                it.run + 1,
                it.objective
            ));
            std::ops::ControlFlow::Continue(())
        });
        *slot = Some(callback);
        Some(Self { bar })
    }

    /// Removes the bar from the terminal (before the report is printed).
    pub fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
