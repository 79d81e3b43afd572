//! The `WWW-Authenticate` challenge of a `401` or `403` (RFC 6750 §3, RFC
//! 9728 §5.1): which metadata to read, which scopes to ask for, what went
//! wrong. Read leniently: whatever a server sends, nothing panics, and what
//! cannot be read is left out.

/// What a `Bearer` challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub(super) resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub(super) scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, …
    pub(super) error: Option<String>,
}

impl Challenge {
    /// Reads the `Bearer` challenge of a `WWW-Authenticate` value (several
    /// challenges may share one value, or come as several headers joined
    /// with commas). Without a `Bearer` challenge, the parameters of the
    /// first challenge are read: some servers send them bare.
    pub(super) fn parse(header: &str) -> Challenge {
        let challenges = split_challenges(header);
        let chosen = challenges
            .iter()
            .find(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .or_else(|| challenges.first());
        let mut challenge = Challenge::default();
        for (name, value) in chosen.map(|(_, p)| p.as_slice()).unwrap_or_default() {
            let slot = match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => &mut challenge.resource_metadata,
                "scope" => &mut challenge.scope,
                "error" => &mut challenge.error,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value.clone());
            }
        }
        challenge
    }

    /// The scopes named, in order, without repeats.
    pub(super) fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref().unwrap_or(""))
    }

    /// Whether this is a `403`'s "the token lacks a scope".
    pub(super) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The most scopes the client asks for at once. A server's metadata may
/// list any number (`scopes_supported`); past this bound the rest are left
/// out, with a warning, rather than sent in an authorization URL no
/// browser or server would take.
pub(super) const MAX_SCOPES: usize = 256;

/// Space-separated scopes, in order, without repeats, at most
/// [`MAX_SCOPES`].
pub(super) fn split_scopes(text: &str) -> Vec<String> {
    merge_scopes([text.split_ascii_whitespace()])
}

/// The scopes of `lists`, one list after the other, in order, without
/// repeats, at most [`MAX_SCOPES`]: one pass over the input (a server's
/// list of 70,000 scopes, within the metadata's size bound, costs no more
/// than reading it).
pub(super) fn merge_scopes<'a, L, I>(lists: L) -> Vec<String>
where
    L: IntoIterator<Item = I>,
    I: IntoIterator<Item = &'a str>,
{
    let mut seen = std::collections::HashSet::new();
    let mut scopes = Vec::new();
    for scope in lists.into_iter().flatten() {
        if scope.is_empty() || !seen.insert(scope) {
            continue;
        }
        if scopes.len() == MAX_SCOPES {
            tracing::warn!("more than {MAX_SCOPES} scopes to ask for; the rest are left out");
            break;
        }
        scopes.push(scope.to_owned());
    }
    scopes
}

type Params = Vec<(String, String)>;

/// The challenges of a header value: each scheme with its parameters.
fn split_challenges(header: &str) -> Vec<(String, Params)> {
    let mut lexer = Lexer {
        rest: header.as_bytes(),
    };
    let mut out: Vec<(String, Params)> = Vec::new();
    loop {
        lexer.skip(|b| b == b' ' || b == b'\t' || b == b',');
        let Some(word) = lexer.token() else {
            if lexer.rest.is_empty() {
                return out;
            }
            lexer.rest = &lexer.rest[1..]; // a stray character
            continue;
        };
        lexer.skip(|b| b == b' ' || b == b'\t');
        if lexer.peek() == Some(b'=') {
            // A parameter of the challenge being read (or, before any
            // scheme, of a bare one).
            lexer.rest = &lexer.rest[1..];
            lexer.skip(|b| b == b' ' || b == b'\t');
            let value = if lexer.peek() == Some(b'"') {
                lexer.quoted()
            } else {
                lexer.token().unwrap_or_default()
            };
            if out.is_empty() {
                out.push((String::new(), Vec::new()));
            }
            if let Some((_, params)) = out.last_mut() {
                params.push((word, value));
            }
        } else {
            out.push((word, Vec::new()));
        }
    }
}

struct Lexer<'a> {
    rest: &'a [u8],
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    fn skip(&mut self, f: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&f) {
            self.rest = &self.rest[1..];
        }
    }

    /// An HTTP token (RFC 9110 §5.6.2), or a token68's characters.
    fn token(&mut self) -> Option<String> {
        let n = self
            .rest
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/:".contains(&b))
            .count();
        if n == 0 {
            return None;
        }
        let (word, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(String::from_utf8_lossy(word).into_owned())
    }

    /// A quoted string, its escapes undone; an unterminated one runs to the end.
    fn quoted(&mut self) -> String {
        let mut bytes = Vec::new();
        self.rest = &self.rest[1..];
        while let Some(b) = self.peek() {
            self.rest = &self.rest[1..];
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(next) = self.peek() {
                        bytes.push(next);
                        self.rest = &self.rest[1..];
                    }
                }
                _ => bytes.push(b),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_lists_are_merged_in_order_without_repeats_and_bounded() {
        assert_eq!(split_scopes(" a  b a\tc b "), ["a", "b", "c"]);
        assert_eq!(
            merge_scopes([vec!["x", "a"], vec!["a", "", "y"], vec!["x"]]),
            ["x", "a", "y"]
        );
        // A server's metadata may list 70,000 scopes within its size
        // bound: read in one pass, and the first MAX_SCOPES kept.
        let many: Vec<String> = (0..70_000).map(|i| format!("scope:{i}")).collect();
        let text = many.join(" ");
        let kept = split_scopes(&text);
        assert_eq!(kept.len(), MAX_SCOPES);
        assert_eq!(kept[..3], ["scope:0", "scope:1", "scope:2"]);
        let held = vec!["scope:5", "held"];
        let merged = merge_scopes([held, many.iter().map(String::as_str).collect()]);
        assert_eq!(merged.len(), MAX_SCOPES);
        assert_eq!(merged[..3], ["scope:5", "held", "scope:0"]);
    }

    #[test]
    fn reads_the_bearer_parameters() {
        let c = Challenge::parse(
            r#"Bearer error="invalid_token", error_description="Missing \"token\"", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp", scope="a b""#,
        );
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://localhost:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scopes(), ["a", "b"]);
        assert!(!c.insufficient_scope());
    }

    #[test]
    fn picks_the_bearer_challenge_among_several() {
        let c = Challenge::parse(
            r#"Basic realm="x", Bearer scope="mcp:write", error="insufficient_scope""#,
        );
        assert_eq!(c.scopes(), ["mcp:write"]);
        assert!(c.insufficient_scope());
        let bare = Challenge::parse(r#"scope=read, error=invalid_token"#);
        assert_eq!(bare.scope.as_deref(), Some("read"));
    }

    #[test]
    fn garbage_reads_as_nothing_without_panicking() {
        for text in [
            "",
            "Bearer",
            "Bearer =",
            "Bearer scope=\"unterminated",
            "Bearer scope=\"a\\",
            ",,, ===",
            "Bearer \u{00e9}=\u{00e9}",
            "\"\"\"",
        ] {
            let _ = Challenge::parse(text);
        }
        assert_eq!(
            Challenge::parse("Bearer scope=\"unterminated")
                .scope
                .as_deref(),
            Some("unterminated")
        );
    }
}
