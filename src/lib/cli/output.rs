//! Rendering: one JSON value on stdout on success; one JSON error object on
//! stderr on failure, with the exit code from [`crate::error::Code::exit_code`].
#![allow(clippy::print_stdout, clippy::print_stderr)]

use crate::error::{Code, Error};
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

/// Prints a command's value and returns `exit_code` (0 for success).
pub fn success(value: &Value, pretty: bool, exit_code: u8) -> ExitCode {
    let stdout = std::io::stdout();
    let pretty = pretty || stdout.is_terminal();
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => return failure(&Error::internal(format!("cannot render output: {e}"))),
    };
    let mut lock = stdout.lock();
    if writeln!(lock, "{text}").and_then(|_| lock.flush()).is_err() {
        return ExitCode::from(Code::Io.exit_code());
    }
    ExitCode::from(exit_code)
}

/// Prints text meant as it is (a table for a person, a completion script
/// a shell sources) and returns `exit_code`.
pub fn text(text: &str, exit_code: u8) -> ExitCode {
    let mut lock = std::io::stdout().lock();
    if lock
        .write_all(text.as_bytes())
        .and_then(|_| lock.flush())
        .is_err()
    {
        return ExitCode::from(Code::Io.exit_code());
    }
    ExitCode::from(exit_code)
}

/// Prints a warning (one JSON object) on stderr; the command still succeeds.
pub fn warning(w: &Value) {
    let _ = writeln!(std::io::stderr().lock(), "{w}");
}

/// Whether stdout is a terminal (a command that prints for a person then
/// prints text rather than JSON).
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// Prints an error object on stderr and returns its exit code.
pub fn failure(e: &Error) -> ExitCode {
    let text = serde_json::to_string(&e.to_json()).unwrap_or_else(|_| {
        format!(
            "{{\"error\":\"{}\",\"message\":\"unrenderable error\"}}",
            e.wire_name()
        )
    });
    let _ = writeln!(std::io::stderr().lock(), "{text}");
    ExitCode::from(e.code().exit_code())
}

/// Maps a clap parse outcome: help and version print as clap renders them
/// and exit 0; every usage error becomes the JSON error with exit 64.
pub fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = write!(std::io::stdout().lock(), "{}", e.render());
            ExitCode::SUCCESS
        }
        _ => {
            let rendered = e.render().to_string();
            let (message, arguments) = usage_message(&e, &rendered);
            let mut err =
                Error::new(Code::Usage, message).with("usage", rendered.trim_end().to_owned());
            if !arguments.is_empty() {
                err = err.with("arguments", arguments);
            }
            failure(&err)
        }
    }
}

/// The one-line `message` of a usage error, naming the argument(s) at fault
/// from clap's error context (clap's own first line ends in a colon and
/// lists them on the following lines for a missing argument), and those
/// names alone.
fn usage_message(e: &clap::Error, rendered: &str) -> (String, Vec<String>) {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let arguments: Vec<String> = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        _ => Vec::new(),
    };
    let first = rendered
        .lines()
        .next()
        .unwrap_or("usage error")
        .trim_start_matches("error: ")
        .trim_end();
    let mut message = match e.kind() {
        ErrorKind::MissingRequiredArgument if !arguments.is_empty() => {
            let noun = if arguments.len() == 1 {
                "argument"
            } else {
                "arguments"
            };
            format!("missing required {noun}: {}", arguments.join(", "))
        }
        _ if first.ends_with(':') && !arguments.is_empty() => {
            format!("{} {}", first, arguments.join(", "))
        }
        _ => first.to_owned(),
    };
    if message.is_empty() {
        message = "usage error".to_owned();
    }
    if let Some(ContextValue::Strings(v)) = e.get(ContextKind::ValidValue)
        && !v.is_empty()
    {
        message = format!("{message} (possible values: {})", v.join(", "));
    }
    let suggestion = [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand]
        .into_iter()
        .find_map(|k| match e.get(k) {
            Some(ContextValue::String(s)) => Some(s.clone()),
            Some(ContextValue::Strings(v)) if !v.is_empty() => Some(v.join(", ")),
            _ => None,
        });
    if let Some(s) = suggestion {
        message = format!("{message} (did you mean {s}?)");
    }
    (message, arguments)
}
