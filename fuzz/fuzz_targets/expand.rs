//! Query-time expansion and packing: documents cut into paragraph sections,
//! pairs of sentences and sentence leaves; hits and options from the input.
//! Passages lie in their document, never share a character, count exactly
//! the tokens of their text (a re-encode) and fit the budget together; every
//! hit is covered by a passage or dropped. The same documents added as their
//! sections, each a part of its document (as a store's reader adds them), give
//! the same payload.
#![no_main]

use _native::expand::{Doc, DocInput, Order, Pack, Params, Store};
use _native::segment::sentences;
use _native::spans::bytes_to_chars;
use chunkforge_fuzz::{count, Input};
use libfuzzer_sys::fuzz_target;

const NONE: u32 = u32::MAX;

/// A document's tree (code point offsets): sections at blank lines, a node per
/// two sentences, a leaf per sentence.
fn tree(text: &str) -> (Vec<(u32, u32, u32)>, Vec<(u32, u32, u32, u32)>, Vec<u32>) {
    let mut sents = vec![];
    let mut nodes = vec![];
    let mut leaves = vec![];
    let mut pos = 0;
    for (section, para) in text.split("\n\n").enumerate() {
        let (s, e) = (pos, pos + para.len());
        pos = e + 2;
        let mut found = vec![];
        sentences(text, s, e, &mut found);
        let found: Vec<_> = found.into_iter().filter(|(a, b)| a < b).collect();
        if found.is_empty() {
            continue;
        }
        let mut offs: Vec<usize> = found.iter().flat_map(|&(a, b)| [a, b]).collect();
        offs.extend([s, e]);
        bytes_to_chars(text, &mut offs);
        let (cs, ce) = (offs[offs.len() - 2] as u32, offs[offs.len() - 1] as u32);
        let root = nodes.len() as u32;
        nodes.push((cs, ce, NONE, section as u32));
        for pair in offs[..offs.len() - 2].chunks(4) {
            let (ps, pe) = (pair[0] as u32, pair[pair.len() - 1] as u32);
            let mid = nodes.len() as u32;
            nodes.push((ps, pe, root, section as u32));
            for sent in pair.chunks(2) {
                sents.push((sent[0] as u32, sent[1] as u32, section as u32));
                leaves.push(nodes.len() as u32);
                nodes.push((sent[0] as u32, sent[1] as u32, mid, section as u32));
            }
        }
    }
    (sents, nodes, leaves)
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::new(data) else { return };
    let (tk, text) = (input.tokenizer(), input.text.as_str());
    let [c0, c1, c2, c3] = input.config;
    // two documents: the text and its second half
    let half = _native::spans::floor_char(text, text.len() / 2);
    let docs = [text, &text[half..]];
    let mut store = Store::default();
    let mut labels = 0u64;
    let mut leaf_docs = vec![];
    for (d, t) in docs.iter().enumerate() {
        let (sentences, nodes, leaves) = tree(t);
        let ids: Vec<u64> = (labels..labels + leaves.len() as u64).collect();
        labels += leaves.len() as u64;
        leaf_docs.extend(std::iter::repeat_n(d, leaves.len()));
        let headings = vec![vec![]; nodes.iter().map(|n| n.3 as usize + 1).max().unwrap_or(0)];
        let doc = Doc::new(tk, DocInput { text: (*t).into(), part: (0, NONE), sentences, nodes, leaves, headings }, None).unwrap();
        store.add(doc, &ids).unwrap();
    }
    if labels == 0 {
        return;
    }
    let hits: Vec<(u64, f64)> = data.iter().skip(4).step_by(7).take(24).map(|&b| (b as u64 % labels, (b as f64) / 255.0)).collect();
    let params = Params {
        window: (c0 & 2 != 0 && c1 & 0x80 == 0).then_some((c1 % 4) as u32),
        window_tokens: (c0 & 2 != 0 && c1 & 0x80 != 0).then_some((c1 % 64) as u32),
        parent: c0 & 4 != 0,
        auto_merge: (c0 & 8 != 0).then_some((c2 % 10) as f64 / 10.0),
        budget: (c0 & 16 != 0).then_some(c3 as usize * 2),
        order: if c0 & 32 != 0 { Order::Document } else { Order::Score },
        pack: if c0 & 64 != 0 { Pack::Stop } else { Pack::Skip },
        trim: c0 & 128 != 0,
    };
    let payload = store.expand(tk, &hits, &params).unwrap();
    let mut total = 0;
    let mut seen: Vec<bool> = vec![false; hits.len()];
    for p in &payload.passages {
        let t = docs[p.doc as usize];
        let chars: Vec<(usize, char)> = t.char_indices().collect();
        let byte = |c: u32| chars.get(c as usize).map_or(t.len(), |x| x.0);
        assert!(p.start < p.end && (p.end as usize) <= chars.len(), "passage {p:?}");
        let piece = &t[byte(p.start)..byte(p.end)];
        assert_eq!(p.tokens as usize, count(tk, piece), "passage {p:?}: {piece:?}");
        total += p.tokens as usize;
        for &h in &p.hits {
            seen[h as usize] = true;
        }
        for q in payload.passages.iter().filter(|q| q.doc == p.doc && !std::ptr::eq(*q, p)) {
            assert!(q.end <= p.start || p.end <= q.start, "passages {p:?} and {q:?} overlap");
        }
    }
    if let Some(budget) = params.budget {
        assert!(total <= budget, "{total} tokens over the budget of {budget}");
    }
    for &d in &payload.dropped {
        seen[d as usize] = true;
    }
    // a hit repeating an earlier one's leaf may be folded into it
    for (i, &(leaf, _)) in hits.iter().enumerate() {
        assert!(seen[i] || hits[..i].iter().any(|h| h.0 == leaf), "hit {i} is neither in a passage nor dropped");
    }
    let _ = leaf_docs;
    // the documents' sections as parts, their leaves labelled as above: the same passages
    let (parts, part_doc) = sections_as_parts(tk, &docs);
    let again = parts.expand(tk, &hits, &params).unwrap();
    let view = |out: &_native::expand::Payload, doc_of: &dyn Fn(u32) -> usize| {
        out.passages.iter().map(|p| (doc_of(p.doc), p.start, p.end, p.tokens, p.score.to_bits(), p.hits.to_vec())).collect::<Vec<_>>()
    };
    assert_eq!(view(&payload, &|slot| slot as usize), view(&again, &|slot| part_doc[slot as usize]), "{params:?}");
    assert_eq!(payload.dropped, again.dropped);
});

/// A store of each document's sections (its tree's roots), each added as a part of
/// its document, and the document of each slot.
fn sections_as_parts(tk: &_native::tokenizer::Tokenizer, docs: &[&str]) -> (Store, Vec<usize>) {
    let (mut store, mut part_doc, mut next) = (Store::default(), vec![], 0u64);
    for (d, t) in docs.iter().enumerate() {
        let (sentences, nodes, leaves) = tree(t);
        let chars: Vec<usize> = t.char_indices().map(|x| x.0).chain([t.len()]).collect();
        let roots: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].2 == NONE).collect();
        for (k, &r) in roots.iter().enumerate() {
            let until = roots.get(k + 1).copied().unwrap_or(nodes.len());
            let (base, end, _, section) = nodes[r];
            let local = |n: &(u32, u32, u32, u32)| (n.0, n.1, if n.2 == NONE { NONE } else { n.2 - r as u32 }, 0);
            let own: Vec<u32> = leaves.iter().filter(|&&l| (r..until).contains(&(l as usize))).map(|&l| l - r as u32).collect();
            let input = DocInput {
                text: t[chars[base as usize]..chars[end as usize]].into(),
                part: (base, d as u32),
                sentences: sentences.iter().filter(|x| x.2 == section).map(|x| (x.0, x.1, 0)).collect(),
                nodes: nodes[r..until].iter().map(local).collect(),
                leaves: own.clone(),
                headings: vec![vec![]],
            };
            let labels: Vec<u64> = (next..next + own.len() as u64).collect();
            next += own.len() as u64;
            let slot = store.add(Doc::new(tk, input, None).unwrap(), &labels).unwrap();
            part_doc.resize(slot + 1, 0);
            part_doc[slot] = d;
        }
    }
    (store, part_doc)
}
