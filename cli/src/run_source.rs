//! `pipelab run`'s command source: the file (or stdin) read in blocks and
//! split into commands as the Redis server would (`resp::RequestReader`:
//! inline lines or RESP multibulks), on a thread of its own.
//!
//! Why a thread: parsing a 1M-command file is about a third of the
//! instructions `pipelab run` spends, and on the executor's thread it
//! stopped the writing and reading of every connection while it ran. The
//! reading thread parses ahead in chunks of [`CHUNK_COMMANDS`] (at most
//! [`CHUNKS_AHEAD`] of them, so memory stays bounded however large the
//! file) and the executor takes them in order. A chunk is also handed over
//! before each read that may block (a pipe that trickles), so a command is
//! never held back waiting for its chunk to fill.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read};
use std::rc::Rc;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use pipelab_engine::exec::{ArgvRef, CommandSource, Commands};

/// Bytes read from the file per read call.
const READ_BYTES: usize = 256 * 1024;
/// Commands per chunk handed from the reading thread to the executor.
const CHUNK_COMMANDS: usize = 1024;
/// Chunks parsed and not yet taken by the executor, at most.
const CHUNKS_AHEAD: usize = 16;

/// Why the file cannot be read on.
#[derive(Debug)]
pub enum SourceError {
    Parse(resp::RequestError),
    Io(io::Error),
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::Parse(e) => write!(f, "{e}"),
            SourceError::Io(e) => write!(f, "reading the input: {e}"),
        }
    }
}

/// Commands parsed together, each with its line and the stream offset of its end.
struct Chunk {
    commands: Commands,
    lines: Vec<(usize, usize)>,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk { commands: Commands::new(), lines: Vec::with_capacity(CHUNK_COMMANDS) }
    }
}

/// The executor's side: commands in file order, the error that stopped
/// the reading (after every command before it), then the end.
pub struct FileSource {
    chunks: Receiver<Result<Chunk, SourceError>>,
    chunk: Chunk,
    next: usize,
    done: bool,
    /// Line and end offset of each command handed out whose result has not arrived yet.
    lines: Rc<RefCell<VecDeque<(usize, usize)>>>,
}

impl FileSource {
    /// Starts the reading thread on `input`. Dropping the source stops it
    /// (at its next chunk).
    pub fn new(input: Box<dyn Read + Send>, lines: Rc<RefCell<VecDeque<(usize, usize)>>>) -> Self {
        let (tx, rx) = sync_channel(CHUNKS_AHEAD);
        std::thread::Builder::new()
            .name("pipelab-run-input".into())
            .spawn(move || Parser::new(input, tx).run())
            .expect("spawning the input thread");
        FileSource { chunks: rx, chunk: Chunk::new(), next: 0, done: false, lines }
    }
}

impl CommandSource for FileSource {
    type Error = SourceError;

    fn next_command(&mut self) -> Result<Option<ArgvRef<'_>>, SourceError> {
        while self.next == self.chunk.commands.len() {
            if self.done {
                return Ok(None);
            }
            // The executor waits here only when it has caught up with the parsing.
            match self.chunks.recv() {
                Ok(Ok(chunk)) => {
                    self.chunk = chunk;
                    self.next = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => self.done = true,
            }
        }
        let i = self.next;
        self.next += 1;
        self.lines.borrow_mut().push_back(self.chunk.lines[i]);
        Ok(Some(self.chunk.commands.get(i)))
    }
}

/// The reading thread: holds at most one block plus one command of input.
struct Parser {
    input: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// `buf[pos..filled]` is not consumed yet; `base` is the stream offset of `buf[0]`.
    pos: usize,
    filled: usize,
    base: usize,
    eof: bool,
    reader: resp::RequestReader,
    out: SyncSender<Result<Chunk, SourceError>>,
}

impl Parser {
    fn new(input: Box<dyn Read + Send>, out: SyncSender<Result<Chunk, SourceError>>) -> Parser {
        Parser { input, buf: vec![0; READ_BYTES], pos: 0, filled: 0, base: 0, eof: false, reader: resp::RequestReader::new(), out }
    }

    /// Parses to the end of input or the first error, handing over chunks;
    /// returns early once the executor has dropped its side.
    fn run(mut self) {
        let mut chunk = Chunk::new();
        loop {
            let res = self.reader.next(&self.buf[self.pos..self.filled], self.eof);
            // The reader also skips blank lines without returning them: follow its offset.
            self.pos = self.reader.offset() - self.base;
            let error = match res {
                Ok(Some(req)) => {
                    chunk.lines.push((req.line, self.reader.offset()));
                    chunk.commands.push(&req.argv);
                    if chunk.lines.len() == CHUNK_COMMANDS && !self.hand_over(&mut chunk) {
                        return;
                    }
                    continue;
                }
                Ok(None) if self.eof => None,
                // Before a read that may block: what is parsed goes now.
                Ok(None) => match self.hand_over(&mut chunk) {
                    false => return,
                    true => match self.read_more() {
                        Ok(()) => continue,
                        Err(e) => Some(SourceError::Io(e)),
                    },
                },
                Err(e) => Some(SourceError::Parse(e)),
            };
            if self.hand_over(&mut chunk) {
                if let Some(e) = error {
                    let _ = self.out.send(Err(e));
                }
            }
            return;
        }
    }

    /// Sends `chunk` if it holds any command (leaving a new one); false if the executor is gone.
    fn hand_over(&mut self, chunk: &mut Chunk) -> bool {
        if chunk.lines.is_empty() {
            return true;
        }
        self.out.send(Ok(std::mem::replace(chunk, Chunk::new()))).is_ok()
    }

    fn read_more(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.base += self.pos;
            self.pos = 0;
        }
        if self.buf.len() - self.filled < READ_BYTES / 2 {
            let len = self.buf.len() * 2;
            self.buf.resize(len, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.filled..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.filled += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}
