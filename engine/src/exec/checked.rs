//! A batch's commands checked and encoded one by one as they are parsed,
//! before the batch is whole.
//!
//! Why: a 100k-command request was checked in four passes (the API's
//! rules, the executor's [`super::validate()`], the kill traits) and
//! encoded segment by segment only after its body's last byte, which
//! delayed its first write by milliseconds. The parser of a request's body
//! ([`Prechecked::command`], called for each command as it is read)
//! records here what those passes need: per mode, the first command that
//! breaks the executor's reply rule; whether any may block or runs a
//! script; the first that may change the connection's state; and every
//! command's RESP, back to back, to be written as it is. Once the body
//! is whole, each check is a look-up, and nothing is sent before it.
//!
//! The record holds only for the commands it was made from and the table
//! it was made with: [`Prechecked::holds_for`] compares both, and a batch
//! it does not hold for is checked and encoded the ordinary way.

use std::ops::Range;
use std::sync::Arc;

use super::{ArgvRef, Commands, Mode};
use crate::commands::Table;


/// What the executor's checks need of each command, and its RESP.
pub struct Prechecked {
    table: Arc<Table>,
    /// Every command's RESP, back to back.
    resp: Vec<u8>,
    /// `ends[i]`: where command `i`'s RESP ends in `resp`: the commands
    /// encoded, a prefix of those checked once [`Prechecked::stop_encoding`].
    ends: Vec<usize>,
    /// Commands checked.
    commands: usize,
    /// Still encoding each command as it comes.
    encoding: bool,
    /// The commands' argument bytes in all: with their count, what tells
    /// the commands recorded from others.
    arg_bytes: usize,
    /// Per mode ([`Mode::index`]), the first command [`Table::reply_rule`] refuses.
    reply: [Option<usize>; 4],
    may_block: bool,
    scripts: bool,
    /// The first command that may change its connection's state ([`Table::changes_connection_state`]).
    first_state_change: Option<usize>,
    /// Most RESP bytes kept: past it the record is given up (the batch is
    /// then checked and encoded the ordinary way), so that a body near the
    /// server's limit does not hold its commands three times.
    max_resp: usize,
    given_up: bool,
}

impl std::fmt::Debug for Prechecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prechecked").field("commands", &self.commands).field("encoded", &self.ends.len()).field("resp_bytes", &self.resp.len()).field("given_up", &self.given_up).finish()
    }
}

impl Prechecked {
    /// An empty record checking with `table`, with room for `expected`
    /// bytes of RESP, keeping at most `max_resp`.
    pub fn new(table: Arc<Table>, expected: usize, max_resp: usize) -> Prechecked {
        Prechecked {
            table,
            resp: Vec::with_capacity(expected.min(max_resp)),
            ends: Vec::new(),
            commands: 0,
            encoding: true,
            arg_bytes: 0,
            reply: [None; 4],
            may_block: false,
            scripts: false,
            first_state_change: None,
            max_resp,
            given_up: false,
        }
    }

    /// The table it checks with.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// Records the next command: its checks and its RESP. Returns whether
    /// no rule of the table concerns it (no rule's pre-filter matches its
    /// name: [`crate::commands::Table::refusal`] then refuses it for no
    /// caller but a read-only one), as most commands of a batch, and the
    /// length of its longest argument.
    pub fn command(&mut self, argv: ArgvRef<'_>) -> (bool, usize) {
        let table = &*self.table;
        // One look at the pre-filters instead of one per rule and mode: a
        // rule whose filter does not match answers as if it were not asked.
        let quiet = argv.name().is_some_and(|name| !table.filters.iter().any(|f| f.may_match(name)));
        if self.given_up {
            return (quiet, argv.iter().map(<[u8]>::len).max().unwrap_or(0));
        }
        let i = self.commands;
        self.commands += 1;
        if !quiet {
            for (k, mode) in Mode::ALL.into_iter().enumerate() {
                if self.reply[k].is_none() && table.reply_rule(argv, mode).is_err() {
                    self.reply[k] = Some(i);
                }
            }
            self.may_block |= table.may_block(argv);
            self.scripts |= table.runs_script(argv);
            if self.first_state_change.is_none() && table.changes_connection_state(argv) {
                self.first_state_change = Some(i);
            }
        }
        let mut longest = 0;
        if !self.encoding {
            for a in argv {
                self.arg_bytes += a.len();
                longest = longest.max(a.len());
            }
            return (quiet, longest);
        }
        header(&mut self.resp, b'*', argv.len());
        for a in argv {
            header(&mut self.resp, b'$', a.len());
            self.resp.extend_from_slice(a);
            self.resp.extend_from_slice(b"\r\n");
            self.arg_bytes += a.len();
            longest = longest.max(a.len());
        }
        self.ends.push(self.resp.len());
        if self.resp.len() > self.max_resp {
            self.given_up = true;
            self.resp = Vec::new();
            self.ends = Vec::new();
        }
        (quiet, longest)
    }

    /// Encodes no more commands (those after are only checked; the
    /// executor encodes them as it sends them): the parser falls behind
    /// the body's arrival, and encoding ahead would delay the first write
    /// instead of saving the executor's time beside Redis's.
    pub fn stop_encoding(&mut self) {
        self.encoding = false;
    }

    /// Commands encoded (the first ones).
    pub fn encoded(&self) -> usize {
        self.ends.len()
    }

    /// True if this is the record of `commands` made with `table`.
    pub fn holds_for(&self, commands: &Commands, table: &Table) -> bool {
        !self.given_up && std::ptr::eq(Arc::as_ptr(&self.table), table) && self.commands == commands.len() && self.arg_bytes == commands.arg_bytes()
    }

    /// The first command [`Table::reply_rule`] refuses in `mode`.
    pub fn reply_refused(&self, mode: Mode) -> Option<usize> {
        self.reply[mode.index()]
    }

    /// True if a command may block its connection (whatever the mode).
    pub fn may_block(&self) -> bool {
        self.may_block
    }

    /// True if a command runs a script or a function.
    pub fn runs_script(&self) -> bool {
        self.scripts
    }

    /// The first command that may change its connection's state.
    pub fn first_state_change(&self) -> Option<usize> {
        self.first_state_change
    }

    /// Bytes of RESP of every command.
    pub fn resp_len(&self) -> usize {
        self.resp.len()
    }

    /// Commands from `from` on, as a segment of the pipeline takes them:
    /// at most `max`, adding one while fewer than `limit` bytes are taken
    /// (a single command may pass it), of those encoded. Their RESP's
    /// range and count (0 past the last encoded).
    pub fn span(&self, from: usize, max: usize, limit: usize) -> (Range<usize>, usize) {
        if from >= self.ends.len() {
            return (0..0, 0);
        }
        let start = if from == 0 { 0 } else { self.ends[from - 1] };
        let (mut end, mut next) = (start, from);
        while next < self.ends.len() && next - from < max && end - start < limit {
            end = self.ends[next];
            next += 1;
        }
        (start..end, next - from)
    }

    /// The RESP at `range` (from [`Prechecked::span`]).
    pub fn resp(&self, range: Range<usize>) -> &[u8] {
        &self.resp[range]
    }
}

/// `t`, `n` in decimal and CRLF: a RESP header, as [`resp::encode_command`]
/// writes it (a test compares), with the usual short lengths written at once.
#[inline(always)]
fn header(out: &mut Vec<u8>, t: u8, n: usize) {
    if n < 10 {
        out.extend_from_slice(&[t, b'0' + n as u8, b'\r', b'\n']);
    } else if n < 100 {
        out.extend_from_slice(&[t, b'0' + (n / 10) as u8, b'0' + (n % 10) as u8, b'\r', b'\n']);
    } else {
        let mut digits = [0u8; 20];
        let (mut at, mut v) = (digits.len(), n);
        while v > 0 {
            at -= 1;
            digits[at] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out.push(t);
        out.extend_from_slice(&digits[at..]);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(commands: &Commands) -> Prechecked {
        let mut p = Prechecked::new(crate::commands::fallback::table(), 0, usize::MAX);
        for argv in commands.iter() {
            p.command(argv);
        }
        p
    }

    #[test]
    fn encodes_as_resp_encode_command_does() {
        let long = "x".repeat(12345);
        let many: Vec<String> = (0..150).map(|i| i.to_string()).collect();
        let mut commands = Commands::from_iter([vec!["SET", "k", "v"], vec!["SET", "key:000001", &long], vec!["PING"], vec![]]);
        commands.push(&many);
        commands.push(&["ECHO", "", "ünïcode", "a\r\nb"]);
        let p = record(&commands);
        let mut want = Vec::new();
        for argv in commands.iter() {
            resp::encode_command(argv, &mut want);
        }
        assert_eq!(p.resp(0..p.resp_len()), want.as_slice());
        assert!(p.holds_for(&commands, &crate::commands::fallback::table()));
        // Each command's own span is its encoding.
        for (i, argv) in commands.iter().enumerate() {
            let (range, n) = p.span(i, 1, 1);
            let mut one = Vec::new();
            resp::encode_command(argv, &mut one);
            assert_eq!((p.resp(range), n), (one.as_slice(), 1));
        }
    }

    #[test]
    fn spans_end_where_a_segment_would() {
        let commands = Commands::from_iter((0..10).map(|_| vec!["SET", "k", "v"]));
        let p = record(&commands);
        let one = p.resp_len() / 10;
        assert_eq!(p.span(0, 100, 1), (0..one, 1));
        assert_eq!(p.span(0, 100, one + 1), (0..2 * one, 2));
        assert_eq!(p.span(3, 4, usize::MAX), (3 * one..7 * one, 4));
        assert_eq!(p.span(8, 100, usize::MAX), (8 * one..10 * one, 2));
        assert_eq!(p.span(10, 100, usize::MAX).1, 0);
    }

    #[test]
    fn records_the_first_command_each_rule_concerns() {
        let commands = Commands::from_iter([vec!["SET", "k", "v"], vec!["MULTI"], vec!["BLPOP", "k", "1"], vec!["SUBSCRIBE", "c"], vec!["EVAL", "return 1", "0"]]);
        let p = record(&commands);
        assert_eq!(p.reply_refused(Mode::Pipeline), Some(3));
        assert_eq!(p.reply_refused(Mode::Transaction), Some(1));
        assert_eq!(p.first_state_change(), Some(1));
        assert!(p.may_block() && p.runs_script());
        // Another table, or other commands: the record does not hold.
        let other = Arc::new((*crate::commands::fallback::table()).clone());
        assert!(!p.holds_for(&commands, &other));
        assert!(!p.holds_for(&Commands::from_iter([vec!["SET", "k", "v"]]), &p.table().clone()));
    }

    #[test]
    fn encodes_a_prefix_once_stopped() {
        let commands = Commands::from_iter((0..6).map(|i| vec!["SET".to_string(), format!("k{i}"), "v".into()]));
        let mut p = Prechecked::new(crate::commands::fallback::table(), 0, usize::MAX);
        for (i, argv) in commands.iter().enumerate() {
            if i == 2 {
                p.stop_encoding();
            }
            p.command(argv);
        }
        assert!(p.holds_for(&commands, &p.table().clone()));
        assert_eq!(p.encoded(), 2);
        assert_eq!(p.span(0, 100, usize::MAX).1, 2);
        assert_eq!(p.span(2, 100, usize::MAX).1, 0);
    }

    #[test]
    fn gives_up_past_its_bytes() {
        let mut p = Prechecked::new(crate::commands::fallback::table(), 0, 40);
        let commands = Commands::from_iter((0..3).map(|_| vec!["SET", "key", "value"]));
        for argv in commands.iter() {
            p.command(argv);
        }
        assert!(!p.holds_for(&commands, &p.table().clone()));
    }
}
