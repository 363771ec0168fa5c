//! wasm-bindgen bindings over `resp` for the playground (CONTRACT.md section 4).
//! Bindings only: every rule lives in `resp`.
