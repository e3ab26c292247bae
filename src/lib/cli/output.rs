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

/// Prints a command's text rendering (for a person) and returns
/// `exit_code`.
pub fn text(text: &str, exit_code: u8) -> ExitCode {
    let mut lock = std::io::stdout().lock();
    if write!(lock, "{text}").and_then(|_| lock.flush()).is_err() {
        return ExitCode::from(Code::Io.exit_code());
    }
    ExitCode::from(exit_code)
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
            let first = rendered
                .lines()
                .next()
                .unwrap_or("usage error")
                .trim_start_matches("error: ")
                .to_owned();
            let err = Error::new(Code::Usage, first).with("usage", rendered.trim_end().to_owned());
            failure(&err)
        }
    }
}
