//! The API's incremental JSON body parser (`pipelab_server::api::incremental`)
//! on arbitrary bodies fed in pieces: no panic; when the fast path takes a
//! body, serde_json reads the same body as the same request (commands and
//! every other field); when it declines, it hands back the body whole. The
//! first byte picks the piece size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipelab_server::api::batch::BatchRequest;
use pipelab_server::api::incremental::IncrementalBody;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let piece = 1 + mode as usize % 64;
    let declared = if mode & 0x80 == 0 { body.len() } else { 0 };
    let mut inc = IncrementalBody::new(declared);
    for chunk in body.chunks(piece) {
        inc.feed(chunk);
    }
    match inc.finish::<BatchRequest>() {
        Ok(fast) => {
            let ordinary: BatchRequest = serde_json::from_slice(body).expect("the fast path took a body serde_json rejects");
            assert_eq!(format!("{fast:?}"), format!("{ordinary:?}"));
        }
        Err(back) => assert_eq!(back, body, "a declined body comes back whole"),
    }
});
