//! The `agent-task` binary: parse, dispatch, map errors to exit codes.

fn main() -> std::process::ExitCode {
    agent_task::cli::main()
}
