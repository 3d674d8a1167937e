//! The URI templates `#[resource]` takes, read at compile time by the rules of the
//! runtime's `UriTemplate::parse` (RFC 6570 `{var}` and `{+var}`), so that a
//! template the runtime would refuse is a compile error under the `uri` literal.
//! A leaf module.

/// The variables of `template`, in order, or why it does not parse.
pub(crate) fn variables(template: &str) -> Result<Vec<String>, String> {
    let mut variables: Vec<String> = Vec::new();
    // Whether the last part read was a variable (two in a row cannot be told apart).
    let mut after_variable = false;
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            after_variable = false;
        }
        let Some(close) = rest[open..].find('}') else {
            return Err("a `{` is not closed".into());
        };
        let expression = &rest[open + 1..open + close];
        let name = expression.strip_prefix('+').unwrap_or(expression);
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(format!(
                "`{{{expression}}}` is not a variable this template syntax takes \
                 (`{{name}}` or `{{+name}}`)"
            ));
        }
        if after_variable {
            return Err(format!(
                "`{{{expression}}}` follows another variable with nothing between them"
            ));
        }
        if variables.iter().any(|v| v == name) {
            return Err(format!("the variable `{name}` appears twice"));
        }
        variables.push(name.to_owned());
        after_variable = true;
        rest = &rest[open + close + 1..];
    }
    if rest.contains('}') {
        return Err("a `}` has no `{`".into());
    }
    Ok(variables)
}

#[cfg(test)]
mod tests {
    use super::variables;

    #[test]
    fn reads_variables_in_order() {
        assert_eq!(
            variables("file:///logs/{date}/{+path}").unwrap(),
            ["date", "path"]
        );
        assert!(variables("notes://today").unwrap().is_empty());
    }

    /// The templates the runtime's `UriTemplate::parse` refuses.
    #[test]
    fn refuses_what_the_runtime_refuses() {
        for bad in ["x/{", "x/{}", "x/{a}{b}", "x/{a}/{a}", "x/{?q}", "x/}"] {
            assert!(variables(bad).is_err(), "{bad}");
        }
    }
}
