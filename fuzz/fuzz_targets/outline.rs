//! Markdown, reST and AsciiDoc outlines and the structured chunker: blocks
//! inside the text and in order, chunks exact and under the limit, never two
//! sections in one chunk, every non-whitespace character outside the front
//! matter in a chunk, context (a table's header) inside the text.
#![no_main]

use _native::split::chunk_structured;
use _native::structure::{markdown, titled, Kind};
use chunkforge_fuzz::{check_chunks, Input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::new(data) else { return };
    let (tk, text) = (input.tokenizer(), input.text.as_str());
    let [c0, c1, c2, c3] = input.config;
    let outline = match (c0 >> 1) % 3 {
        0 => markdown(text),
        1 => titled(text, false),
        _ => titled(text, true),
    };
    let mut last_end = 0;
    for b in &outline.blocks {
        assert!(b.start < b.end && b.end <= text.len(), "block {b:?}");
        assert!(b.start >= last_end, "blocks overlap: {b:?}");
        assert!(b.section < outline.sections.len());
        last_end = b.end;
    }
    // what precedes the first block and is not whitespace is front matter
    let from = outline.blocks.first().map_or(text.len(), |b| b.start);
    let front = text[..from].trim();
    assert!(front.is_empty() || (c0 >> 1) % 3 == 0 && text.starts_with("---"), "text before the first block: {front:?}");
    let max = 1 + (c1 as usize % 64);
    let min_tokens = c2 as usize % (max + 1);
    let overlap = c3 as usize % max;
    let chunks = chunk_structured(tk, text, &outline, (max, min_tokens, overlap), false).unwrap().0;
    let spans: Vec<_> = chunks.iter().map(|c| c.span).collect();
    check_chunks(tk, text, &spans, max, from);
    for c in &chunks {
        assert!(c.section < outline.sections.len());
        if let Some((s, e)) = c.context {
            assert!(s < e && e <= text.len() && text.is_char_boundary(s) && text.is_char_boundary(e));
        }
        // a chunk lies within the blocks of one section
        for b in outline.blocks.iter().filter(|b| b.start < c.span.end && c.span.start < b.end) {
            // (a heading alone merges into its first subsection)
            let heading_of = b.kind == Kind::Heading && outline.sections[c.section].starts_with(&outline.sections[b.section]);
            assert!(b.section == c.section || heading_of, "chunk {c:?} crosses into section {} ({b:?})", b.section);
        }
    }
});
