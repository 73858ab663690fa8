//! The tokenizer's fast path and the sizer: ids and offsets equal to HF's
//! pipeline, and the count of any span (prefix sums and recounts of the words it
//! cuts) equal to the count of the span encoded alone.
#![no_main]

use _native::sizer::Sizer;
use _native::spans::{ceil_char, floor_char};
use chunkforge_fuzz::Input;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::new(data) else { return };
    let (tk, text) = (input.tokenizer(), input.text.as_str());
    let doc = tk.with_cache(|c| tk.analyze(text, true, c)).unwrap();
    let hf = tk.hf.encode(text, false).unwrap();
    let tm = doc.tokens.as_ref().unwrap();
    assert_eq!(tm.ids, hf.get_ids(), "ids of {text:?}");
    // a byte token inside a character spans the whole character (as Python sees it)
    let span = |s: usize, e: usize| (floor_char(text, s), ceil_char(text, e));
    let ours: Vec<_> = tm.start.iter().zip(&tm.end).map(|(&s, &e)| span(s as usize, e as usize)).collect();
    let theirs: Vec<_> = hf.get_offsets().iter().map(|&(s, e)| span(s, e)).collect();
    assert_eq!(ours, theirs, "token offsets of {text:?}");
    assert_eq!(tk.with_cache(|c| tk.count(text, c)).unwrap(), hf.len());
    // spans picked by the config bytes, on char boundaries
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    let n = bounds.len();
    let mut seed = u32::from_le_bytes(input.config) as usize;
    tk.with_cache(|cache| {
        let mut sz = Sizer::new(tk, text, &doc, cache);
        for _ in 0..8 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let a = bounds[(seed >> 7) % n];
            let b = bounds[(seed >> 29) % n];
            let (s, e) = (a.min(b), a.max(b));
            // the count of the span encoded alone (equal to HF's: the check above, on any text)
            let alone = tk.with_cache(|c| tk.count(&text[s..e], c)).unwrap();
            assert_eq!(sz.exact(s, e), alone, "span {s}..{e} of {text:?}");
            // its ids from the document's tokenization: those of the span encoded alone
            let ids = tk.hf.encode(&text[s..e], false).unwrap().get_ids().to_vec();
            assert_eq!(sz.token_ids(s, e).unwrap(), ids, "ids of span {s}..{e} of {text:?}");
        }
    });
});
