//! The `wgsparse` command line: parses arguments, calls the library, prints results.

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// Exit status when stdout is closed early (`wgsparse … | head`): 128 + SIGPIPE, as a shell
/// reports a process the signal ended.
const BROKEN_PIPE_EXIT: i32 = 141;

fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Rust ignores SIGPIPE, so `println!` to a closed pipe panics; end quietly instead, as
/// command-line tools do when their reader has gone.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(BROKEN_PIPE_EXIT);
        }
        default(info);
    }));
}
