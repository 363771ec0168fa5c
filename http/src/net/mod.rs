//! What `pipelab serve` does to each accepted HTTP connection before hyper
//! sees it: count it against the connection caps ([`cap`]) and bound how
//! long a response may wait for its client to read ([`write_timeout`]).

pub mod cap;
pub mod write_timeout;
