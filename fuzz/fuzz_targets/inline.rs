//! The inline parser and the request reader on arbitrary bytes: no panic;
//! errors point inside the text; to_inline → split_args is the identity on
//! what was split; the request reader gives the same requests and error
//! whether fed whole or in growing chunks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resp::{parse_inline, split_args, to_inline, RequestReader};

type Outcome = (Vec<(Vec<Vec<u8>>, usize, usize)>, Option<(usize, usize, Option<usize>)>);

fn requests(input: &[u8], cuts: &[usize]) -> Outcome {
    let mut r = RequestReader::new();
    r.max_inline_len = 64;
    r.max_bulk_len = 64;
    let mut start = 0;
    let mut out = Vec::new();
    let points: Vec<usize> = cuts.iter().copied().chain(std::iter::once(input.len())).collect();
    for (k, &end) in points.iter().enumerate() {
        let end = end.max(start).min(input.len());
        let eof = k == points.len() - 1;
        loop {
            match r.next(&input[start..end], eof) {
                Ok(Some(req)) => {
                    assert!(req.consumed > 0 && req.consumed <= end - start);
                    assert!(!req.argv.is_empty());
                    start += req.consumed;
                    out.push((req.argv, req.line, req.offset));
                }
                Ok(None) => break,
                Err(e) => return (out, Some((e.offset, e.line, e.column))),
            }
        }
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else { return };

    if let Ok(argv) = split_args(input) {
        if !argv.is_empty() {
            let line = to_inline(&argv);
            assert_eq!(split_args(line.as_bytes()).unwrap(), argv);
        }
    } else if let Err(e) = split_args(input) {
        assert!(e.offset <= input.len());
    }

    let p = parse_inline(input);
    for c in &p.commands {
        assert!(c.start <= c.end && c.end <= input.len() && !c.argv.is_empty());
    }
    for e in &p.errors {
        assert!(e.offset < input.len() && e.line >= 1 && e.column >= 1);
    }

    let whole = requests(input, &[]);
    let stride = 1 + mode as usize % 13;
    let cuts: Vec<usize> = (0..input.len()).step_by(stride).collect();
    assert_eq!(requests(input, &cuts), whole);
});
