//! What every subcommand shares: opening `FILE|-`, and the exit status of
//! docs/cli.md#exit-status.

use std::io::BufRead;
use std::process::ExitCode;

/// Exit status: 0 success; 1 the work ran but Redis returned error replies
/// (as `redis-cli --pipe`); 2 bad usage or input that cannot be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    ErrorReplies = 1,
    BadInput = 2,
}

impl Exit {
    /// An I/O failure: a closed pipe (`| head`) ends quietly, anything else is reported.
    pub fn from_io(e: std::io::Error) -> Exit {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Exit::Ok;
        }
        eprintln!("error: {e}");
        Exit::BadInput
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// `FILE|-` as messages name it: `stdin` for `-`.
pub fn input_name(file: &str) -> &str {
    if file == "-" { "stdin" } else { file }
}

/// `-` is stdin; anything else a file, with its name in the error.
pub fn open_input(file: &str) -> std::io::Result<Box<dyn BufRead>> {
    const CAP: usize = 256 * 1024;
    if file == "-" {
        return Ok(Box::new(std::io::BufReader::with_capacity(CAP, std::io::stdin())));
    }
    match std::fs::File::open(file) {
        Ok(f) => Ok(Box::new(std::io::BufReader::with_capacity(CAP, f))),
        Err(e) => Err(std::io::Error::new(e.kind(), format!("cannot open {file}: {e}"))),
    }
}

/// clap parser for `--bandwidth` in Mbit/s.
pub fn bandwidth_mbps(s: &str) -> Result<f64, String> {
    let v = s.trim().parse::<f64>().map_err(|_| String::from("must be a number of Mbit/s, e.g. 100"))?;
    pipelab_engine::delay::check_bandwidth(Some(v)).map(|_| v).map_err(|e| e.to_string())
}

/// clap parser for counts that must be at least 1 (`--batch-size`).
pub fn at_least_one(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(String::from("must be a whole number, at least 1")),
    }
}
