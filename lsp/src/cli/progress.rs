//! Progress on a terminal: a bar on stderr while indexing, nothing when stderr is not a terminal;
//! and [`Terminal`], the engine's console for a command: notices and bars on stderr.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sift_engine::index::Progress;
use sift_engine::open::{Bar, Console};

/// Shows update progress as an indicatif bar on stderr.
pub struct TerminalProgress {
    bar: ProgressBar,
}

impl TerminalProgress {
    /// A bar when stderr is a terminal and `quiet` is off; hidden otherwise.
    pub fn new(quiet: bool) -> Self {
        let target = if quiet || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        TerminalProgress { bar }
    }

    /// Removes the bar from the screen.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for TerminalProgress {
    fn phase(&self, name: &'static str, total: Option<u64>) {
        match total {
            Some(total) => {
                let template = if name == "embedding" {
                    "{msg:>10} [{bar:30}] {pos}/{len} chunks, {elapsed} elapsed, about {eta} left"
                } else {
                    "{msg:>10} [{bar:30}] {pos}/{len} files, {elapsed} elapsed, about {eta} left"
                };
                self.bar.set_style(
                    ProgressStyle::with_template(template)
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                self.bar.set_length(total);
                self.bar.set_position(0);
            }
            None => {
                self.bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg}…")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                self.bar.enable_steady_tick(std::time::Duration::from_millis(120));
            }
        }
        self.bar.set_message(name);
    }

    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }
}

impl Bar for TerminalProgress {
    fn finish(&self) {
        TerminalProgress::finish(self);
    }
}

/// The engine's [`Console`] for a command run in a terminal: notices are lines on stderr,
/// progress is a [`TerminalProgress`] bar.
pub struct Terminal;

impl Console for Terminal {
    fn note(&self, line: &str) {
        eprintln!("{line}");
    }

    fn progress(&self, quiet: bool) -> Box<dyn Bar> {
        Box::new(TerminalProgress::new(quiet))
    }
}
