//! The token, recursive and sentence chunkers: exact offsets and counts, the
//! limit, coverage of non-whitespace, no panic.
#![no_main]

use _native::segment::Level;
use _native::split::{chunk, Config, Strategy};
use chunkforge_fuzz::{check_chunks, Input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::new(data) else { return };
    let (tk, text) = (input.tokenizer(), input.text.as_str());
    let [c0, c1, c2, c3] = input.config;
    let max = 1 + (c1 as usize % 64);
    let overlap = c2 as usize % max;
    let strategy = match (c0 >> 1) % 4 {
        0 => Strategy::Token,
        1 => Strategy::Recursive { levels: Level::defaults(), min_tokens: c3 as usize % (max + 1) },
        2 => Strategy::Recursive {
            levels: vec![Level::Literal(", ".into()), Level::Literal("\n".into()), Level::Literal("x".into())],
            min_tokens: 0,
        },
        _ => Strategy::Sentence { overlap_sentences: c3 as usize % 4 },
    };
    let overlap = if matches!(strategy, Strategy::Sentence { .. }) { 0 } else { overlap };
    let cfg = Config { strategy, max_tokens: max, overlap };
    let chunks = chunk(tk, text, &cfg).unwrap();
    check_chunks(tk, text, &chunks, max, 0);
});
