use alloc::boxed::Box;
use alloc::vec::Vec;

/// One RESP2 or RESP3 value, binary-safe.
///
/// The three nulls are kept apart (`_`, `$-1`, `*-1`) so that decoding and
/// re-encoding gives back the same bytes; the reply JSON shows all three as
/// `{"type":"null"}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `+OK`: a simple string (no CR or LF inside: the decoder rejects them,
    /// and the encoder would write a broken frame).
    Simple(Vec<u8>),
    /// `-ERR message`: a simple error (no CR or LF inside, as `Simple`).
    Error(Vec<u8>),
    /// `:42`: a signed 64-bit integer.
    Integer(i64),
    /// `$5\r\nhello`: a bulk string, any bytes.
    Bulk(Vec<u8>),
    /// `_`: the RESP3 null.
    Null,
    /// `$-1`: the RESP2 null bulk string.
    NullBulk,
    /// `*-1`: the RESP2 null array.
    NullArray,
    /// `*N`: an array.
    Array(Vec<Value>),
    /// `,1.5`: a RESP3 double (`inf`, `-inf`, `nan` included).
    Double(f64),
    /// `#t` / `#f`.
    Boolean(bool),
    /// `!N`: a RESP3 bulk error.
    BlobError(Vec<u8>),
    /// `=N\r\ntxt:...`: a RESP3 verbatim string with its 3-byte format.
    Verbatim { format: [u8; 3], text: Vec<u8> },
    /// `(123…`: a RESP3 big number, kept as its ASCII digits (optional `-`).
    BigNumber(Vec<u8>),
    /// `%N`: a RESP3 map as key/value pairs in wire order (keys may be any type).
    Map(Vec<(Value, Value)>),
    /// `~N`: a RESP3 set, in wire order.
    Set(Vec<Value>),
    /// `>N`: a RESP3 push (out-of-band) message.
    Push(Vec<Value>),
    /// `|N`: RESP3 attributes, attached to the value that follows them.
    Attributed { attributes: Vec<(Value, Value)>, value: Box<Value> },
}

impl Value {
    /// True for error replies (`-ERR`, `!N`), looking through attributes.
    pub fn is_error(&self) -> bool {
        match self {
            Value::Error(_) | Value::BlobError(_) => true,
            Value::Attributed { value, .. } => value.is_error(),
            _ => false,
        }
    }

    /// The error text of an error reply (`ERR …`, `WRONGTYPE …`), if this is one.
    pub fn error_message(&self) -> Option<&[u8]> {
        match self {
            Value::Error(m) | Value::BlobError(m) => Some(m),
            Value::Attributed { value, .. } => value.error_message(),
            _ => None,
        }
    }

    /// True for the three nulls.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null | Value::NullBulk | Value::NullArray)
    }

    /// The value without its attributes.
    pub fn unattributed(&self) -> &Value {
        match self {
            Value::Attributed { value, .. } => value.unattributed(),
            v => v,
        }
    }
}
