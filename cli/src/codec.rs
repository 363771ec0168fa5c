//! `pipelab resp encode|decode|format|inline`: the codec on files and pipes,
//! streamed so that a file of millions of commands needs constant memory.
//! Exit status as docs/cli.md#exit-status: 0 success, 2 input that cannot be
//! parsed (message on stderr: `pipelab resp decode: byte N: …`, or
//! `… line L, column C: …`, named as every subcommand names itself).

use super::input::{open_input, Exit};
use clap::Subcommand;
use resp::{Decoded, Decoder, RequestReader};
use std::io::{BufRead, Write};

#[derive(Debug, Subcommand)]
pub enum RespCommand {
    /// Inline commands, one per line (split as Redis `sdssplitargs`; blank
    /// lines skipped) -> RESP multibulk bytes on stdout.
    Encode {
        /// Input file, or `-` for stdin.
        #[arg(default_value = "-")]
        file: String,
    },
    /// A RESP byte stream -> one reply-JSON value per line (NDJSON).
    Decode {
        #[arg(default_value = "-")]
        file: String,
    },
    /// A RESP byte stream -> each value as redis-cli prints it.
    Format {
        #[arg(default_value = "-")]
        file: String,
    },
    /// Commands as RESP or inline (mixed, as the server reads them) -> one
    /// inline line per command, quoted so that it reads back the same.
    Inline {
        #[arg(default_value = "-")]
        file: String,
    },
}

pub fn run(cmd: RespCommand) -> Exit {
    let (name, result) = match cmd {
        RespCommand::Encode { file } => ("resp encode", encode(&file)),
        RespCommand::Decode { file } => (
            "resp decode",
            decode(&file, |v, out| {
                serde_json::to_writer(&mut *out, v)?;
                out.write_all(b"\n")
            }),
        ),
        RespCommand::Format { file } => ("resp format", decode(&file, |v, out| out.write_all(v.display().as_bytes()))),
        RespCommand::Inline { file } => ("resp inline", inline(&file)),
    };
    match result {
        Ok(Ok(())) => Exit::Ok,
        Ok(Err(message)) => {
            eprintln!("pipelab {name}: {message}");
            Exit::BadInput
        }
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Ok,
        Err(e) => {
            eprintln!("pipelab {name}: {e}");
            Exit::BadInput
        }
    }
}

/// `Ok(Err(message))`: the input cannot be parsed; the message says where.
type Outcome = std::io::Result<Result<(), String>>;

fn stdout() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock())
}

fn encode(file: &str) -> Outcome {
    let mut input = open_input(file)?;
    let mut out = stdout();
    let (mut line_no, mut written) = (0usize, 0usize);
    let mut line = Vec::new();
    let mut resp = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        line_no += 1;
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        match resp::split_args(text) {
            Ok(argv) if argv.is_empty() => {}
            Ok(argv) => {
                resp.clear();
                resp::encode_command(&argv, &mut resp);
                out.write_all(&resp)?;
                written += 1;
            }
            Err(e) => {
                out.flush()?;
                let col = resp::inline::column_of(text, e.offset);
                let plural = if written == 1 { "command" } else { "commands" };
                return Ok(Err(format!("line {line_no}, column {col}: {} ({written} {plural} before line {line_no} written to stdout)", e.message)));
            }
        }
    }
    out.flush()?;
    Ok(Ok(()))
}

/// Streams a RESP file through the incremental decoder, handing each value to `emit`.
fn decode(file: &str, mut emit: impl FnMut(&resp::Value, &mut dyn Write) -> std::io::Result<()>) -> Outcome {
    let mut input = open_input(file)?;
    let mut out = stdout();
    let mut decoder = Decoder::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut start = 0; // first unconsumed byte of buf
    let mut base = 0usize; // stream offset of buf[0]
    loop {
        match decoder.decode(&buf[start..]) {
            Ok(Decoded::Complete { value, consumed }) => {
                emit(&value, &mut out)?;
                start += consumed;
                continue;
            }
            Ok(Decoded::Incomplete { .. }) => {}
            Err(e) => {
                out.flush()?;
                return Ok(Err(format!("byte {}: {}", base + start + e.offset, e.message)));
            }
        }
        // Need more bytes: drop what is consumed, read a chunk.
        if start > 0 {
            buf.drain(..start);
            base += start;
            start = 0;
        }
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            out.flush()?;
            if buf.is_empty() {
                return Ok(Ok(()));
            }
            return Ok(Err(format!("byte {}: incomplete value: the input ends inside it ({} bytes left over)", base, buf.len())));
        }
        let n = chunk.len();
        buf.extend_from_slice(chunk);
        input.consume(n);
    }
}

fn inline(file: &str) -> Outcome {
    let mut input = open_input(file)?;
    let mut out = stdout();
    let mut reader = RequestReader::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut eof = false;
    loop {
        match reader.next(&buf, eof) {
            Ok(Some(req)) => {
                writeln!(out, "{}", resp::to_inline(&req.argv))?;
                buf.drain(..req.consumed);
            }
            Ok(None) if eof => break,
            Ok(None) => {
                let chunk = input.fill_buf()?;
                let n = chunk.len();
                eof = n == 0;
                buf.extend_from_slice(chunk);
                input.consume(n);
            }
            Err(e) => {
                out.flush()?;
                return Ok(Err(e.to_string()));
            }
        }
    }
    out.flush()?;
    Ok(Ok(()))
}
