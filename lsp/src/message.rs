//! How errors read at the edge: one line, the cause chain joined, for stderr and for editors.

/// The one-line message for an error: the chain, joined.
pub fn describe(err: &anyhow::Error) -> String {
    let mut out = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}
