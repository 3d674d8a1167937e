//! A source's URL, read: which kind of source, and where.

use crate::error::ToolError;

/// A source of tools, read from its URL (see the [module docs](super)).
///
/// ```
/// use toolfunc::mount::Source;
///
/// let child = Source::parse("mcp+stdio:python3 'my server.py' --port=0").unwrap();
/// assert_eq!(
///     child,
///     Source::McpStdio { program: "python3".into(), args: vec!["my server.py".into(), "--port=0".into()] },
/// );
/// let api = Source::parse("openapi+https://example.com/v1/openapi.json").unwrap();
/// assert_eq!(api, Source::OpenApiUrl("https://example.com/v1/openapi.json".into()));
/// assert_eq!(Source::parse("mcp+stdio:").unwrap_err().code(), "BAD_URL");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `mcp+stdio:COMMAND ARG...`: a program started as a child process, speaking
    /// MCP on its stdin and stdout.
    McpStdio {
        /// The program (found on `PATH` as a shell would).
        program: String,
        /// Its arguments, split as a shell would (quotes and backslashes), with no
        /// shell expansion.
        args: Vec<String>,
    },
    /// `mcp+http://…`, `mcp+https://…`: a streamable HTTP endpoint (the URL without
    /// `mcp+`).
    McpHttp(String),
    /// `openapi+http(s)://…`: an OpenAPI document fetched from this URL.
    OpenApiUrl(String),
    /// `openapi+file:PATH`: an OpenAPI document read from a file.
    OpenApiFile(String),
}

impl Source {
    /// Reads a source URL. Fails with `BAD_URL` for another scheme, an empty
    /// command, or unbalanced quotes.
    pub fn parse(url: &str) -> Result<Self, ToolError> {
        let bad = |reason: &str| ToolError::BadUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url.split_once(':').ok_or_else(|| bad("it has no scheme"))?;
        match scheme.to_ascii_lowercase().as_str() {
            "mcp+stdio" => {
                let mut words = split_words(rest).ok_or_else(|| bad("a quote is not closed"))?;
                if words.is_empty() {
                    return Err(bad("`mcp+stdio:` names no command"));
                }
                let program = words.remove(0);
                Ok(Self::McpStdio {
                    program,
                    args: words,
                })
            }
            "mcp+http" | "mcp+https" => Ok(Self::McpHttp(url["mcp+".len()..].to_owned())),
            "openapi+http" | "openapi+https" => {
                Ok(Self::OpenApiUrl(url["openapi+".len()..].to_owned()))
            }
            "openapi+file" => {
                let path = rest.strip_prefix("//").unwrap_or(rest);
                if path.is_empty() {
                    return Err(bad("`openapi+file:` names no file"));
                }
                Ok(Self::OpenApiFile(path.to_owned()))
            }
            _ => Err(bad(
                "a source is mcp+stdio:, mcp+http(s)://, openapi+http(s):// or openapi+file:",
            )),
        }
    }
}

/// Splits a command line as a POSIX shell splits words, without expanding
/// anything: whitespace separates, `'…'` keeps everything, `"…"` keeps all but
/// `\"`, `\\`, `\$` and `` \` ``, and a backslash outside quotes keeps the next
/// character. `None` when a quote is not closed.
fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            '\n' => {}
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(c) => word.push(c),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::split_words;

    #[test]
    fn words_split_as_a_shell_splits_them() {
        let words = |line| split_words(line).unwrap();
        assert_eq!(words("a  b\tc"), ["a", "b", "c"]);
        assert_eq!(
            words(r#"python3 "my server.py" 'x y'z"#),
            ["python3", "my server.py", "x yz"]
        );
        assert_eq!(words(r#"a\ b "q\"uote" '\n'"#), ["a b", "q\"uote", "\\n"]);
        assert_eq!(words("''"), [""]);
        assert!(words("  ").is_empty());
        assert_eq!(split_words("'open"), None);
        assert_eq!(split_words("\"open"), None);
    }
}
