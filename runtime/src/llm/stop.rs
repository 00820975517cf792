//! Stop sequences over streamed text: text is released only once it can no longer be the start
//! of a stop sequence, so a caller never sees part of one.

/// Feeds on streamed text pieces and releases what is safe to show.
#[derive(Debug, Clone, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
    stopped: bool,
}

/// What one [`StopMatcher::push`] gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    /// Text now safe to show (may be empty).
    pub text: String,
    /// True when a stop sequence was reached: nothing after it may be shown.
    pub stopped: bool,
}

impl StopMatcher {
    /// A matcher for these stop sequences (empty ones are ignored).
    pub fn new(stops: &[String]) -> Self {
        Self { stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(), ..Self::default() }
    }

    /// Whether a stop sequence was reached.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Adds a piece of generated text.
    pub fn push(&mut self, piece: &str) -> Released {
        if self.stopped {
            return Released { text: String::new(), stopped: true };
        }
        self.held.push_str(piece);
        // The earliest complete stop sequence ends the text.
        if let Some(at) = self.stops.iter().filter_map(|s| self.held.find(s.as_str())).min() {
            let text = self.held[..at].to_owned();
            self.held.clear();
            self.stopped = true;
            return Released { text, stopped: true };
        }
        // Hold back the longest tail that is a proper prefix of some stop sequence.
        let keep =
            self.stops.iter().map(|s| longest_suffix_prefix(&self.held, s)).max().unwrap_or(0);
        let cut = self.held.len() - keep;
        let text = self.held[..cut].to_owned();
        self.held.drain(..cut);
        Released { text, stopped: false }
    }

    /// Releases whatever is held (generation ended without a stop sequence).
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `stop`, at a char
/// boundary of `text`.
fn longest_suffix_prefix(text: &str, stop: &str) -> usize {
    let max = text.len().min(stop.len().saturating_sub(1));
    (1..=max)
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && stop.as_bytes().starts_with(&text.as_bytes()[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, bool) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut m = StopMatcher::new(&stops);
        let mut out = String::new();
        for p in pieces {
            let r = m.push(p);
            out.push_str(&r.text);
            if r.stopped {
                return (out, true);
            }
        }
        out.push_str(&m.finish());
        (out, false)
    }

    #[test]
    fn a_stop_split_across_pieces_is_never_shown() {
        let stops = vec!["</end>".to_string()];
        let mut m = StopMatcher::new(&stops);
        assert_eq!(m.push("hello </e").text, "hello ");
        let r = m.push("nd> more");
        assert_eq!(r, Released { text: String::new(), stopped: true });
        assert!(m.stopped());
    }

    #[test]
    fn text_that_only_looked_like_a_stop_is_released() {
        assert_eq!(run(&["</end>"], &["a </", "b> c"]), ("a </b> c".into(), false));
        assert_eq!(run(&["\n\n"], &["x\n", "y"]), ("x\ny".into(), false));
    }

    #[test]
    fn the_earliest_of_several_stops_wins() {
        assert_eq!(run(&["STOP", "END"], &["one END two STOP"]), ("one ".into(), true));
    }

    #[test]
    fn no_stops_releases_everything_at_once() {
        let mut m = StopMatcher::new(&[String::new()]);
        assert_eq!(m.push("abc").text, "abc");
        assert_eq!(m.finish(), "");
    }

    #[test]
    fn multibyte_text_is_cut_at_char_boundaries() {
        assert_eq!(run(&["éé"], &["aé", "b", "éé"]), ("aéb".into(), true));
        assert_eq!(run(&["日本"], &["x日", "y"]), ("x日y".into(), false));
    }
}
