//! Message and fix templates: text where `{name}` stands for the text of capture `name`, and
//! `{{` and `}}` stand for literal braces.

/// The capture names a template uses, in order; an error for an unclosed or empty `{…}`.
pub(crate) fn names(template: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    for piece in pieces(template) {
        match piece? {
            Piece::Capture(name) => out.push(name),
            Piece::Text(_) => {}
        }
    }
    Ok(out)
}

/// `template` with each `{name}` replaced by `lookup(name)` (empty when it returns `None`).
/// A template that does not parse is returned as it is; rules are validated when they load.
pub(crate) fn render(template: &str, mut lookup: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len());
    for piece in pieces(template) {
        match piece {
            Ok(Piece::Text(t)) => out.push_str(t),
            Ok(Piece::Capture(name)) => out.push_str(&lookup(name).unwrap_or_default()),
            Err(_) => return template.to_string(),
        }
    }
    out
}

enum Piece<'a> {
    Text(&'a str),
    Capture(&'a str),
}

fn pieces(template: &str) -> impl Iterator<Item = Result<Piece<'_>, String>> {
    let mut rest = template;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if let Some(r) = rest.strip_prefix("{{") {
            rest = r;
            return Some(Ok(Piece::Text("{")));
        }
        if let Some(r) = rest.strip_prefix("}}") {
            rest = r;
            return Some(Ok(Piece::Text("}")));
        }
        if let Some(r) = rest.strip_prefix('{') {
            let Some(end) = r.find('}') else {
                rest = "";
                return Some(Err("`{` without a closing `}` (write `{{` for a brace)".into()));
            };
            let name = &r[..end];
            rest = &r[end + 1..];
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
            return Some(if valid {
                Ok(Piece::Capture(name))
            } else {
                Err(format!("`{{{name}}}` is not a capture name (write `{{{{` for a brace)"))
            });
        }
        let end = rest.find(['{', '}']).unwrap_or(rest.len());
        let end = if end == 0 { 1 } else { end };
        let (text, r) = rest.split_at(end);
        rest = r;
        Some(Ok(Piece::Text(text)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_captures_and_braces() {
        let out = render("{left} == {right} {{x}}", |n| Some(n.to_uppercase()));
        assert_eq!(out, "LEFT == RIGHT {x}");
        assert_eq!(names("a {b} {{c}} {d}").unwrap(), vec!["b", "d"]);
        assert!(names("oops {b").is_err());
        assert!(names("{a b}").is_err());
        assert_eq!(render("no captures }", |_| None), "no captures }");
    }
}
