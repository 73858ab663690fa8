//! An index's document tree: sections -> parent levels -> leaves, built from
//! one tokenization of the document.
//!
//! Sections come from the document's headings (Markdown, reST, AsciiDoc) or
//! are the whole text; each level of parents packs whole sentences of its
//! parent up to its token size (the sentence chunker); leaves are the
//! sentences of the lowest parents, a sentence over `leaf_tokens` cut at
//! clauses, then words, then tokens, so no leaf is ever over `leaf_tokens`.
//! Every count, and every leaf's token ids, comes from the one [`DocTokens`]
//! of the document, which the expansion [`Doc`] keeps too.

use crate::error::Result;
use crate::expand::{Doc, DocInput};
use crate::segment::sentences;
use crate::sizer::Sizer;
use crate::spans::{bytes_to_chars, trim, NONE};
use crate::split::{sentence_chunks, span_ids, structured_in};
use crate::structure::{self, Syntax};
use crate::tokenizer::Tokenizer;

/// The stable id of a tree node: the 8-byte BLAKE2b digest, in hex, of
/// `doc_id NUL start NUL end NUL level` (numbers in decimal), where `doc_id` is
/// the document id's UTF-8 (a lone surrogate as Python's `surrogatepass` writes it).
pub fn node_id(doc_id: &[u8], start: u64, end: u64, level: u64) -> String {
    use blake2::digest::{Update, VariableOutput};
    use std::fmt::Write;
    let mut hasher = blake2::Blake2bVar::new(8).expect("8 bytes is a BLAKE2b digest size");
    hasher.update(doc_id);
    hasher.update(format!("\0{start}\0{end}\0{level}").as_bytes());
    let mut digest = [0u8; 8];
    hasher.finalize_variable(&mut digest).expect("the buffer is the digest's size");
    digest.iter().fold(String::with_capacity(16), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

/// A section is never cut: its "chunk" limit.
const WHOLE: usize = 1 << 30;

/// How documents are cut into a tree.
#[derive(Clone, Debug)]
pub struct TreeConfig {
    /// Token sizes of the levels between sections and leaves, largest first.
    pub parent_tokens: Vec<usize>,
    /// The most tokens of a leaf.
    pub leaf_tokens: usize,
}

/// A document's tree, ready for the store, and what the index needs of it.
pub struct Tree {
    /// The document with its tree (nodes and leaves: [`Doc::node_rows`], [`Doc::leaves`]).
    pub doc: Doc,
    /// Token ids of each leaf encoded alone (no special tokens): leaf `i`'s are
    /// `leaf_ids[leaf_bounds[i]..leaf_bounds[i + 1]]`.
    pub leaf_ids: Vec<u32>,
    pub leaf_bounds: Vec<usize>,
}

/// Builds the tree of `text`, tokenizing it once.
pub fn build(tk: &Tokenizer, text: &str, syntax: Option<Syntax>, cfg: &TreeConfig) -> Result<Tree> {
    tk.with_cache(|cache| {
        let mut tokens = tk.analyze(text, true, cache)?;
        let mut sz = Sizer::new(tk, text, &tokens, cache);
        let (sections, headings) = sections(&mut sz, syntax);
        let mut nodes: Vec<[usize; 5]> = vec![];
        let mut leaves = vec![];
        let mut sents: Vec<[usize; 3]> = vec![];
        let mut found = vec![];
        for (sec, &(s, e)) in sections.iter().enumerate() {
            found.clear();
            sentences(text, s, e, &mut found);
            sents.extend(found.iter().map(|&(a, b)| [a, b, sec]));
            nodes.push([s, e, NONE as usize, sec, 0]);
            grow(&mut sz, cfg, nodes.len() - 1, 1, &mut nodes, &mut leaves);
        }
        let (leaf_ids, leaf_bounds) = span_ids(&mut sz, leaves.iter().map(|&l: &u32| (nodes[l as usize][0], nodes[l as usize][1])))?;
        // code point offsets for Python and the store
        let mut offs: Vec<usize> = nodes.iter().flat_map(|n| [n[0], n[1]]).chain(sents.iter().flat_map(|x| [x[0], x[1]])).collect();
        bytes_to_chars(text, &mut offs);
        let (node_offs, sent_offs) = offs.split_at(2 * nodes.len());
        let nodes: Vec<(u32, u32, u32, u32)> =
            nodes.iter().zip(node_offs.chunks(2)).map(|(n, o)| (o[0] as u32, o[1] as u32, n[2] as u32, n[3] as u32)).collect();
        let sentences: Vec<(u32, u32, u32)> = sents.iter().zip(sent_offs.chunks(2)).map(|(x, o)| (o[0] as u32, o[1] as u32, x[2] as u32)).collect();
        tokens.tokens = None; // the leaves' ids are taken: expansion needs the words only
        let input = DocInput {
            text: text.into(),
            part: (0, NONE),
            sentences,
            nodes,
            leaves,
            headings,
        };
        let doc = Doc::new(tk, input, Some(tokens))?;
        Ok(Tree { doc, leaf_ids, leaf_bounds })
    })
}

/// Byte spans of the sections of the document and the heading path of each:
/// the whole (trimmed) text when there is no syntax.
fn sections(sz: &mut Sizer, syntax: Option<Syntax>) -> (Vec<(usize, usize)>, Vec<Vec<String>>) {
    let text = sz.text;
    let Some(syntax) = syntax else {
        let (s, e) = trim(text, 0, text.len());
        return if s < e { (vec![(s, e)], vec![vec![]]) } else { (vec![], vec![]) };
    };
    let outline = structure::outline(text, syntax);
    let mut spans: Vec<(usize, usize)> = vec![];
    let mut headings = vec![];
    let mut last = usize::MAX;
    // the structured chunker with no size limit: one chunk per section, a lone
    // heading merged into its first subsection
    for c in structured_in(sz, &outline, WHOLE, 0, 0) {
        if c.section == last {
            spans.last_mut().unwrap().1 = c.span.end;
        } else {
            spans.push((c.span.start, c.span.end));
            headings.push(outline.sections[c.section].clone());
        }
        last = c.section;
    }
    (spans, headings)
}

/// Appends the children of node `parent` at `level` (1: the first level under
/// sections), depth first, so that parents come before their children and
/// leaves are in text order.
fn grow(sz: &mut Sizer, cfg: &TreeConfig, parent: usize, level: usize, nodes: &mut Vec<[usize; 5]>, leaves: &mut Vec<u32>) {
    let [ps, pe, _, sec, _] = nodes[parent];
    if level > cfg.parent_tokens.len() {
        for (s, e) in leaf_spans(sz, ps, pe, cfg.leaf_tokens) {
            leaves.push(nodes.len() as u32);
            nodes.push([s, e, parent, sec, level]);
        }
        return;
    }
    for c in sentence_chunks(sz, (ps, pe), cfg.parent_tokens[level - 1], 0) {
        nodes.push([c.start, c.end, parent, sec, level]);
        grow(sz, cfg, nodes.len() - 1, level + 1, nodes, leaves);
    }
}

/// One span per sentence of `[s, e)`; a sentence over `max` tokens is cut at
/// clauses, then words, then tokens.
fn leaf_spans(sz: &mut Sizer, s: usize, e: usize, max: usize) -> Vec<(usize, usize)> {
    let mut found = vec![];
    sentences(sz.text, s, e, &mut found);
    let mut out = vec![];
    for (a, b) in found {
        if sz.count(a, b) <= max {
            out.push((a, b));
        } else {
            out.extend(sentence_chunks(sz, (a, b), max, 0).into_iter().map(|c| (c.start, c.end)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_are_python_blake2b_digests() {
        // hashlib.blake2b(b"guide.md\x000\x00120\x001", digest_size=8).hexdigest()
        assert_eq!(node_id(b"guide.md", 0, 120, 1), "3e4ee5fb70e478c2");
        assert_ne!(node_id(b"guide.md", 0, 120, 2), node_id(b"guide.md", 0, 120, 1));
    }

    fn tokenizer() -> Tokenizer {
        let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json")).unwrap();
        Tokenizer::from_json(&json).unwrap()
    }

    #[test]
    fn sections_parents_and_leaves_from_one_tokenization() {
        let tk = tokenizer();
        let text = "# Cats\n\nCats purr. They sleep a lot, mostly in the sun, on warm stones and soft beds.\n\n## Food\n\nFish.";
        let cfg = TreeConfig { parent_tokens: vec![12], leaf_tokens: 6 };
        let before = tk.tokenized().0;
        let tree = build(&tk, text, Some(Syntax::Markdown), &cfg).unwrap();
        assert_eq!(tk.tokenized().0, before + 1, "the document is tokenized once");
        let chars: Vec<char> = text.chars().collect();
        let slice = |n: &[u32; 5]| chars[n[0] as usize..n[1] as usize].iter().collect::<String>();
        let (nodes, leaves) = (tree.doc.node_rows(), tree.doc.leaves());
        let texts: Vec<String> = leaves.iter().map(|&l| slice(&nodes[l as usize])).collect();
        assert!(texts.contains(&"Cats purr.".to_string()) && texts.contains(&"Fish.".to_string()));
        for (i, &l) in leaves.iter().enumerate() {
            let n = &nodes[l as usize];
            let alone = tk.with_cache(|c| tk.analyze(&slice(n), true, c)).unwrap().tokens.unwrap().ids;
            assert_eq!(&tree.leaf_ids[tree.leaf_bounds[i]..tree.leaf_bounds[i + 1]], &alone[..], "leaf {i}: {:?}", slice(n));
            assert!(alone.len() <= 6, "leaf {i} is over leaf_tokens");
            // a leaf lies in its parent, a parent in its section
            let p = &nodes[n[2] as usize];
            assert!(p[0] <= n[0] && n[1] <= p[1] && p[3] == n[3] && p[4] + 1 == n[4]);
        }
        // the "Food" section is a root of its own
        assert_eq!(nodes.iter().filter(|n| n[2] == NONE).count(), 2);
    }
}
