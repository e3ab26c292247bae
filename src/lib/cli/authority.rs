//! The one place the interactive agent commands find their authority:
//! the endpoint, repository, profile (and, through [`super::ctx::Ctx`],
//! the token file and data directory). Each value comes from its flag
//! first, then from its `AGENT_TASK_*` variable; a flag that only makes
//! sense locally, used while a variable switched the command to the
//! endpoint, is an `env_conflict` error naming that variable.
//!
//! The Stop hooks never come here: they take every value from their own
//! command line (the agent shapes the hook's environment; a fallback would
//! let it point the hook at a fake endpoint or a forged data directory).

use crate::error::{Code, Error, Result};

/// The endpoint's base URL.
pub const ENDPOINT_VAR: &str = "AGENT_TASK_ENDPOINT";
/// The repository id of the workspace profile.
pub const REPOSITORY_VAR: &str = "AGENT_TASK_REPOSITORY";
/// The profile id.
pub const PROFILE_VAR: &str = "AGENT_TASK_PROFILE";
/// The agent's token file.
pub const TOKEN_FILE_VAR: &str = "AGENT_TASK_TOKEN_FILE";
/// The data directory.
pub const DATA_DIR_VAR: &str = "AGENT_TASK_DATA_DIR";

/// Where a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Its flag on the command line.
    Flag,
    /// The named environment variable.
    Var(&'static str),
}

/// One resolved value and its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The value.
    pub value: String,
    /// Where it came from.
    pub origin: Origin,
}

/// The flag's value, else the variable's (a set, non-empty, UTF-8 value).
pub fn pick(flag: Option<&str>, var: &'static str) -> Option<Resolved> {
    match flag {
        Some(v) => Some(Resolved {
            value: v.to_owned(),
            origin: Origin::Flag,
        }),
        None => crate::env::var(var)
            .filter(|v| !v.is_empty())
            .map(|value| Resolved {
                value,
                origin: Origin::Var(var),
            }),
    }
}

/// A workspace endpoint, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// Base URL.
    pub endpoint: Resolved,
    /// Repository id of the workspace profile.
    pub repository: Resolved,
    /// Profile id.
    pub profile: Resolved,
}

impl Authority {
    /// The remote client's endpoint.
    pub fn endpoint(&self) -> crate::remote::Endpoint {
        crate::remote::Endpoint {
            base: self.endpoint.value.clone(),
            repository: self.repository.value.clone(),
            profile: self.profile.value.clone(),
        }
    }

    /// The error for `flag`, which only makes sense without an endpoint:
    /// `env_conflict` naming the variable when a variable chose the
    /// endpoint, else `usage`.
    pub fn conflict(&self, flag: &str, why: &str) -> Error {
        conflict(&self.endpoint, flag, why)
    }

    /// The error for a missing `flag` the endpoint form needs: naming the
    /// variable that chose the endpoint, if a variable did.
    pub fn needs(&self, flag: &str, why: &str) -> Error {
        needs(&self.endpoint, flag, why)
    }
}

fn needs(endpoint: &Resolved, flag: &str, why: &str) -> Error {
    match endpoint.origin {
        Origin::Var(var) => Error::new(
            Code::EnvConflict,
            format!(
                "{var} is set, so this command runs through the endpoint {}, which needs {flag} \
                 ({why}): pass it, or unset {var}",
                endpoint.value
            ),
        )
        .with("variable", var)
        .with("flag", flag),
        Origin::Flag => Error::new(Code::Usage, format!("with --endpoint, pass {flag} ({why})"))
            .with("flag", flag),
    }
}

/// The error for `flag`, which only makes sense without an endpoint,
/// used while `endpoint` names one.
pub fn conflict(endpoint: &Resolved, flag: &str, why: &str) -> Error {
    match endpoint.origin {
        Origin::Var(var) => Error::new(
            Code::EnvConflict,
            format!(
                "{flag} {why}, but {var} is set, which makes this command run through the \
                 endpoint {}: unset {var} (or pass what the endpoint form needs)",
                endpoint.value
            ),
        )
        .with("variable", var)
        .with("flag", flag),
        Origin::Flag => {
            Error::new(Code::Usage, format!("{flag} {why}: not with --endpoint")).with("flag", flag)
        }
    }
}

/// Resolves the endpoint triple: `None` when neither `--endpoint` nor
/// `AGENT_TASK_ENDPOINT` names one. With an endpoint, the repository and
/// profile are required (flag or variable); without one, a
/// `--repository`/`--profile` flag is a usage error (their variables are
/// then ignored: they only configure the endpoint form).
pub fn resolve(
    endpoint: Option<&str>,
    repository: Option<&str>,
    profile: Option<&str>,
) -> Result<Option<Authority>> {
    let Some(e) = pick(endpoint, ENDPOINT_VAR) else {
        if repository.is_some() {
            return Err(Error::new(
                Code::Usage,
                format!("--repository goes with --endpoint (or {ENDPOINT_VAR})"),
            ));
        }
        if profile.is_some() {
            return Err(Error::new(
                Code::Usage,
                format!("--profile goes with --endpoint (or {ENDPOINT_VAR})"),
            ));
        }
        return Ok(None);
    };
    let need = |flag: &str, var: &'static str, v: Option<&str>| {
        pick(v, var).ok_or_else(|| needs(&e, flag, &format!("or {var}")))
    };
    let repository = need("--repository", REPOSITORY_VAR, repository)?;
    let profile = need("--profile", PROFILE_VAR, profile)?;
    Ok(Some(Authority {
        endpoint: e,
        repository,
        profile,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(v: &str) -> Resolved {
        Resolved {
            value: v.into(),
            origin: Origin::Flag,
        }
    }

    #[test]
    fn flags_resolve_without_the_environment() {
        let a = resolve(Some("http://h:1"), Some("r"), Some("p"))
            .expect("ok")
            .expect("some");
        assert_eq!(a.endpoint, flag("http://h:1"));
        assert_eq!(a.endpoint().profile, "p");
        let e = a.conflict("--workspace", "names a local workspace");
        assert_eq!(e.code(), Code::Usage);
    }

    #[test]
    fn a_variable_named_endpoint_is_named_in_the_conflict() {
        let a = Authority {
            endpoint: Resolved {
                value: "http://h:1".into(),
                origin: Origin::Var(ENDPOINT_VAR),
            },
            repository: flag("r"),
            profile: flag("p"),
        };
        let e = a.conflict("--workspace", "names a local workspace");
        assert_eq!(e.code(), Code::EnvConflict);
        assert!(e.message().contains(ENDPOINT_VAR), "{}", e.message());
        assert_eq!(
            e.details().and_then(|d| d.get("variable")),
            Some(&serde_json::json!(ENDPOINT_VAR))
        );
    }
}
