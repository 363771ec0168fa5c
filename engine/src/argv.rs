//! A command's argv, and a batch's commands stored back to back in one
//! buffer: below the command table and the executor, which both read them.
//!
//! Why not `Vec<Vec<Vec<u8>>>`: a 100k-command batch is then 400k
//! allocations, made while parsing the request and freed after the
//! response, and together they took longer than Redis took to run the
//! batch. Here a batch is three vectors whatever its size: the argument
//! bytes, where each argument ends, and where each command's arguments end.
//! Each command is read through an [`ArgvRef`], a view that costs nothing.

/// One command owned: its argv, as bytes (binary-safe). A batch keeps its
/// commands in one [`Commands`] buffer instead.
pub type Argv = Vec<Vec<u8>>;

/// Commands, each an argv of byte strings (binary-safe), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commands {
    /// Every argument's bytes, one after the other.
    bytes: Vec<u8>,
    /// `bounds[k]..bounds[k + 1]` is argument `k` in `bytes`; starts with 0.
    bounds: Vec<usize>,
    /// `cmds[c]..cmds[c + 1]` are the arguments of command `c`; starts with 0.
    cmds: Vec<usize>,
}

impl Commands {
    /// No commands.
    pub fn new() -> Self {
        Commands { bytes: Vec::new(), bounds: vec![0], cmds: vec![0] }
    }

    /// No commands, with room for `bytes` argument bytes, `args` arguments
    /// and `commands` commands before any reallocation.
    pub fn with_capacity(bytes: usize, args: usize, commands: usize) -> Self {
        let mut c = Commands { bytes: Vec::with_capacity(bytes), bounds: Vec::with_capacity(args + 1), cmds: Vec::with_capacity(commands + 1) };
        c.bounds.push(0);
        c.cmds.push(0);
        c
    }

    /// Number of commands.
    #[inline]
    pub fn len(&self) -> usize {
        self.cmds.len() - 1
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total bytes of all arguments.
    #[inline]
    pub fn arg_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Command `i`. Panics if `i >= len()`, as slice indexing does.
    #[inline]
    pub fn get(&self, i: usize) -> ArgvRef<'_> {
        let (a, b) = (self.cmds[i], self.cmds[i + 1]);
        ArgvRef { bytes: &self.bytes, bounds: &self.bounds[a..=b] }
    }

    /// Every command in order.
    #[inline]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = ArgvRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Appends one whole command.
    pub fn push<A: AsRef<[u8]>>(&mut self, argv: &[A]) {
        for a in argv {
            self.push_arg(a.as_ref());
        }
        self.end_command();
    }

    /// Appends one argument to the command being built (see [`Commands::end_command`]).
    #[inline]
    pub fn push_arg(&mut self, arg: &[u8]) {
        self.bytes.extend_from_slice(arg);
        self.bounds.push(self.bytes.len());
    }

    /// The buffer to append an argument's bytes to directly (a decoder
    /// writing in place); then [`Commands::end_arg`].
    #[inline]
    pub fn arg_buffer(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Ends the argument written through [`Commands::arg_buffer`].
    #[inline]
    pub fn end_arg(&mut self) {
        self.bounds.push(self.bytes.len());
    }

    /// Drops the bytes of an argument begun through
    /// [`Commands::arg_buffer`] but not ended (its decoding failed).
    #[inline]
    pub fn abandon_arg(&mut self) {
        let start = *self.bounds.last().expect("bounds starts with 0");
        self.bytes.truncate(start);
    }

    /// Drops the arguments pushed since the last [`Commands::end_command`],
    /// and any begun through [`Commands::arg_buffer`] (a command whose
    /// input is incomplete, to be read again).
    #[inline]
    pub fn abandon_command(&mut self) {
        let first = *self.cmds.last().expect("cmds starts with 0");
        self.bounds.truncate(first + 1);
        self.bytes.truncate(*self.bounds.last().expect("bounds starts with 0"));
    }

    /// Arguments pushed since the last [`Commands::end_command`].
    #[inline]
    pub fn open_args(&self) -> usize {
        self.bounds.len() - 1 - self.cmds.last().expect("cmds starts with 0")
    }

    /// Closes the command made of the arguments pushed since the last call
    /// (possibly none: an empty argv, which validation then refuses).
    #[inline]
    pub fn end_command(&mut self) {
        self.cmds.push(self.bounds.len() - 1);
    }

    /// Keeps the first `n` commands (and drops any arguments of a command
    /// not ended): a parse that declined takes back what it appended.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len() {
            self.abandon_command();
            return;
        }
        self.cmds.truncate(n + 1);
        let args = self.cmds[n];
        self.bounds.truncate(args + 1);
        self.bytes.truncate(self.bounds[args]);
    }

    /// Removes every command, keeping the allocations (a source that
    /// reads one command at a time reuses one `Commands`).
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.bounds.truncate(1);
        self.cmds.truncate(1);
    }
}

impl Default for Commands {
    fn default() -> Self {
        Commands::new()
    }
}

impl<A: AsRef<[u8]>> FromIterator<Vec<A>> for Commands {
    fn from_iter<T: IntoIterator<Item = Vec<A>>>(iter: T) -> Self {
        let mut out = Commands::new();
        for argv in iter {
            out.push(&argv);
        }
        out
    }
}

impl From<Vec<Argv>> for Commands {
    fn from(v: Vec<Argv>) -> Self {
        v.into_iter().collect()
    }
}

/// One command of a [`Commands`]: its arguments as byte slices.
#[derive(Debug, Clone, Copy)]
pub struct ArgvRef<'a> {
    bytes: &'a [u8],
    /// The argument boundaries: `len() + 1` offsets into `bytes`.
    bounds: &'a [usize],
}

impl<'a> ArgvRef<'a> {
    /// Number of arguments (the name included).
    #[inline]
    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Argument `i`, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        (i < self.len()).then(|| &self.bytes[self.bounds[i]..self.bounds[i + 1]])
    }

    /// The command name (argument 0).
    #[inline]
    pub fn name(&self) -> Option<&'a [u8]> {
        self.get(0)
    }

    /// The arguments in order.
    #[inline]
    pub fn iter(&self) -> Args<'a> {
        Args { bytes: self.bytes, bounds: self.bounds }
    }

    /// An owned copy.
    pub fn to_vec(&self) -> Argv {
        self.iter().map(<[u8]>::to_vec).collect()
    }
}

impl<'a> IntoIterator for ArgvRef<'a> {
    type Item = &'a [u8];
    type IntoIter = Args<'a>;
    fn into_iter(self) -> Args<'a> {
        self.iter()
    }
}

/// The arguments of an [`ArgvRef`].
#[derive(Debug, Clone)]
pub struct Args<'a> {
    bytes: &'a [u8],
    bounds: &'a [usize],
}

impl<'a> Iterator for Args<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        match self.bounds {
            [a, b, ..] => {
                let arg = &self.bytes[*a..*b];
                self.bounds = &self.bounds[1..];
                Some(arg)
            }
            _ => None,
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.bounds.len().saturating_sub(1);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Args<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_keep_arguments_apart_including_empty_ones() {
        let mut c = Commands::new();
        c.push(&["SET", "k", ""]);
        c.push::<&str>(&[]);
        c.push(&[b"GET".as_slice(), b"\xff\x00"]);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(0).to_vec(), vec![b"SET".to_vec(), b"k".to_vec(), Vec::new()]);
        assert!(c.get(1).is_empty());
        assert_eq!(c.get(1).name(), None);
        assert_eq!(c.get(2).name(), Some(b"GET".as_slice()));
        assert_eq!(c.get(2).get(1), Some(b"\xff\x00".as_slice()));
        assert_eq!(c.get(2).get(2), None);
        assert_eq!(c.iter().map(|a| a.len()).collect::<Vec<_>>(), [3, 0, 2]);
        assert_eq!(c.arg_bytes(), 3 + 1 + 3 + 2);
    }

    #[test]
    fn a_view_encodes_like_the_owned_argv() {
        let argv: Argv = vec![b"SET".to_vec(), b"key".to_vec(), b"a b".to_vec()];
        let c = Commands::from(vec![argv.clone()]);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        resp::encode_command(&argv, &mut a);
        resp::encode_command(c.get(0), &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn arguments_written_in_place_and_abandoned_ones() {
        let mut c = Commands::new();
        c.arg_buffer().extend_from_slice(b"PING");
        c.end_arg();
        c.arg_buffer().extend_from_slice(b"half-decoded");
        c.abandon_arg();
        assert_eq!(c.open_args(), 1);
        c.end_command();
        assert_eq!(c.get(0).to_vec(), vec![b"PING".to_vec()]);
        c.clear();
        assert!(c.is_empty());
        c.push(&["ECHO", "x"]);
        assert_eq!(c.get(0).to_vec(), vec![b"ECHO".to_vec(), b"x".to_vec()]);
    }
}
