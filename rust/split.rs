//! The chunkers: token windows, recursive separators, sentences. Each turns a
//! document into [`ChunkSpan`]s (byte spans with their exact token counts);
//! all sizing runs on the document's one tokenization through a [`Sizer`].

use crate::error::{input, Result};
use crate::segment::{sentences, split_level, Level};
use crate::sizer::Sizer;
use crate::spans::{bytes_to_chars, ceil_char, floor_char, trim, ChunkSpan};
use crate::structure::{Block, Kind, Outline, Syntax};
use crate::tokenizer::Tokenizer;

#[derive(Clone, Debug)]
pub enum Strategy {
    /// Fixed windows of `max_tokens` tokens, stride `max_tokens - overlap`.
    Token,
    /// Separator hierarchy, greedy merge, token overlap, optional floor.
    Recursive { levels: Vec<Level>, min_tokens: usize },
    /// Sentences packed up to the limit, overlap in whole sentences.
    Sentence { overlap_sentences: usize },
    /// Sections and blocks of a `markdown`, `rst` or `asciidoc` document.
    Structured { syntax: Syntax, min_tokens: usize },
}

impl Strategy {
    /// The strategy called `name`: `"token"`, `"recursive"` (on `separators`, or the
    /// default levels), `"sentence"`, or a syntax (`"markdown"`, `"rst"`, `"asciidoc"`:
    /// see [`Syntax::from_name`]); each takes the parameters it has of the others.
    pub fn from_name(name: &str, min_tokens: usize, overlap_sentences: usize, separators: Option<Vec<String>>) -> Result<Strategy> {
        Ok(match name {
            "token" => Strategy::Token,
            "recursive" => {
                let levels = separators.map_or_else(Level::defaults, |seps| seps.into_iter().map(Level::Literal).collect());
                Strategy::Recursive { levels, min_tokens }
            }
            "sentence" => Strategy::Sentence { overlap_sentences },
            "markdown" | "rst" | "asciidoc" => Strategy::Structured { syntax: Syntax::from_name(name)?, min_tokens },
            other => return Err(input!("unknown strategy {other:?}")),
        })
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub strategy: Strategy,
    pub max_tokens: usize,
    pub overlap: usize,
}

/// A piece that fits the limit, to be merged with its neighbours.
#[derive(Clone, Copy, Debug)]
struct Unit {
    s: usize,
    e: usize,
}

/// The room a chunk's own new text may take when `overlap` tokens of the
/// previous chunk are to be repeated in front of it.
fn content_budget(max: usize, overlap: usize) -> usize {
    max.saturating_sub(overlap).max(1)
}

/// Chunks one document.
pub fn chunk(tk: &Tokenizer, text: &str, cfg: &Config) -> Result<Vec<ChunkSpan>> {
    Ok(chunk_with(tk, text, cfg, false)?.0)
}

/// Token ids of `spans` of the analysed document behind `sz`, concatenated, with bounds.
pub fn span_ids(sz: &mut Sizer, spans: impl Iterator<Item = (usize, usize)>) -> Result<(Vec<u32>, Vec<usize>)> {
    let mut ids = vec![];
    let mut bounds = vec![0];
    for (s, e) in spans {
        ids.extend(sz.token_ids(s, e)?);
        bounds.push(ids.len());
    }
    Ok((ids, bounds))
}

/// Token ids of chunks, concatenated, and their bounds: chunk `i`'s are `ids[bounds[i]..bounds[i + 1]]`.
pub type Ids = Option<(Vec<u32>, Vec<usize>)>;

/// Chunks one document, and with `with_ids` gives each chunk's token ids (as if
/// encoded alone, without special tokens) from the same tokenization.
pub fn chunk_with(tk: &Tokenizer, text: &str, cfg: &Config, with_ids: bool) -> Result<(Vec<ChunkSpan>, Ids)> {
    let (s, e) = trim(text, 0, text.len());
    if s >= e {
        return Ok((vec![], with_ids.then(|| (vec![], vec![0]))));
    }
    tk.with_cache(|cache| {
        let with_tokens = with_ids || matches!(cfg.strategy, Strategy::Token);
        let doc = tk.analyze(text, with_tokens, cache)?;
        let mut sz = Sizer::new(tk, text, &doc, cache);
        let spans = chunk_in(&mut sz, (s, e), cfg)?;
        let ids = if with_ids { Some(span_ids(&mut sz, spans.iter().map(|c| (c.start, c.end)))?) } else { None };
        Ok((spans, ids))
    })
}

/// Chunks `[s, e)` (trimmed, not empty) of the analysed document behind `sz`.
fn chunk_in(sz: &mut Sizer, (s, e): (usize, usize), cfg: &Config) -> Result<Vec<ChunkSpan>> {
    let max = cfg.max_tokens;
    let mut units = vec![];
    let mut groups = vec![];
    match &cfg.strategy {
        Strategy::Token => Ok(token_windows(sz, max, cfg.overlap)),
        Strategy::Recursive { levels, min_tokens } => {
            // room for the overlap is reserved: a chunk's new text takes at most `budget`
            let budget = content_budget(max, cfg.overlap);
            split_group(sz, levels, (s, e), 0, budget, &mut units, &mut groups);
            verify_groups(sz, &units, &mut groups, budget);
            apply_floor(sz, &units, &mut groups, *min_tokens, budget);
            Ok(with_overlap_in(sz, &units, &groups, max, cfg.overlap, |_| 0))
        }
        Strategy::Structured { .. } => Err(input!("use chunk_structured for structured documents")),
        Strategy::Sentence { overlap_sentences } => Ok(sentence_chunks(sz, (s, e), max, *overlap_sentences)),
    }
}

/// The sentence chunker on `[s, e)` of the analysed document behind `sz`.
pub fn sentence_chunks(sz: &mut Sizer, (s, e): (usize, usize), max: usize, overlap_sentences: usize) -> Vec<ChunkSpan> {
    let (mut units, mut groups, mut sents) = (vec![], vec![], vec![]);
    sentences(sz.text, s, e, &mut sents);
    pack_sentences(sz, &sents, max, overlap_sentences, &mut units, &mut groups);
    verify_groups(sz, &units, &mut groups, max);
    groups
        .iter()
        .map(|&(a, b)| {
            let (start, end) = (units[a].s, units[b - 1].e);
            ChunkSpan { start, end, tokens: sz.exact(start, end) }
        })
        .collect()
}

/// Sentences packed greedily up to `max`, each chunk after the first starting
/// with the last `carry` sentences of the one before when they fit beside at
/// least the next new sentence (fewer when not all do; never the whole previous
/// chunk). A sentence longer than `max` is split at clauses, then words, then
/// tokens, into chunks of their own that carry nothing and are not carried.
/// `groups` may overlap: a group is the range of `units` of one chunk.
fn pack_sentences(
    sz: &mut Sizer,
    sents: &[(usize, usize)],
    max: usize,
    carry: usize,
    units: &mut Vec<Unit>,
    groups: &mut Vec<(usize, usize)>,
) {
    let finer = [Level::Clause, Level::Word];
    let mut open: Option<usize> = None; // index in `groups` of a group of whole sentences
    for &(a, b) in sents {
        if sz.count(a, b) > max {
            split_group(sz, &finer, (a, b), 0, max, units, groups);
            open = None;
            continue;
        }
        units.push(Unit { s: a, e: b });
        let new = units.len() - 1;
        if let Some(g) = open {
            let (first, end) = groups[g];
            if sz.count(units[first].s, b) <= max {
                groups[g].1 = end + 1;
                continue;
            }
            // the next chunk starts with the previous one's last sentences, as many as fit
            let mut start = end.saturating_sub(carry).max(first + 1);
            while start < new && sz.count(units[start].s, b) > max {
                start += 1;
            }
            groups.push((start, new + 1));
        } else {
            groups.push((new, new + 1));
        }
        open = Some(groups.len() - 1);
    }
}

/// Chunks `[s, e)` (trimmed) into groups of units: the span itself if it fits,
/// else the pieces of the coarsest level (from `level` on) that has a
/// separator inside, merged greedily; token windows are the last resort.
/// `groups` are ranges of `units`; each group becomes a chunk.
fn split_group(
    sz: &mut Sizer,
    levels: &[Level],
    (s, e): (usize, usize),
    level: usize,
    max: usize,
    units: &mut Vec<Unit>,
    groups: &mut Vec<(usize, usize)>,
) {
    let (s, e) = trim(sz.text, s, e);
    if s >= e {
        return; // whitespace only: no chunk
    }
    if sz.count(s, e) <= max {
        units.push(Unit { s, e });
        groups.push((units.len() - 1, units.len()));
        return;
    }
    let mut pieces = vec![];
    for (l, lvl) in levels.iter().enumerate().skip(level) {
        pieces.clear();
        split_level(sz.text, s, e, lvl, &mut pieces);
        if pieces.len() > 1 {
            group_pieces(sz, levels, &pieces, l + 1, max, units, groups);
            return;
        }
    }
    let first = units.len();
    token_units(sz, s, e, max, units);
    groups.extend((first..units.len()).map(|u| (u, u + 1)));
}

/// Greedy merge of sibling pieces while the merged span fits; a piece too long
/// on its own is chunked at the finer levels and merges with no sibling.
fn group_pieces(
    sz: &mut Sizer,
    levels: &[Level],
    pieces: &[(usize, usize)],
    next_level: usize,
    max: usize,
    units: &mut Vec<Unit>,
    groups: &mut Vec<(usize, usize)>,
) {
    let mut open: Option<usize> = None; // index in `groups` of a group that may grow
    for &(a, b) in pieces {
        if let Some(g) = open {
            let first = units[groups[g].0].s;
            if sz.count(first, b) <= max {
                units.push(Unit { s: a, e: b });
                groups[g].1 = units.len();
                continue;
            }
        }
        if sz.count(a, b) <= max {
            units.push(Unit { s: a, e: b });
            groups.push((units.len() - 1, units.len()));
            open = Some(groups.len() - 1);
        } else {
            split_group(sz, levels, (a, b), next_level, max, units, groups);
            open = None;
        }
    }
}

/// On HF's general path counts are estimates: re-encode each group and move
/// trailing units to a group of their own until it fits.
fn verify_groups(sz: &mut Sizer, units: &[Unit], groups: &mut Vec<(usize, usize)>, max: usize) {
    verify_groups_with(sz, units, groups, max, &mut Vec::<()>::new());
}

/// [`verify_groups`], keeping `info` (one entry per group, if any) in step.
fn verify_groups_with<T: Copy>(sz: &mut Sizer, units: &[Unit], groups: &mut Vec<(usize, usize)>, max: usize, info: &mut Vec<T>) {
    if sz.doc.exact_words {
        return;
    }
    let mut i = 0;
    while i < groups.len() {
        let (a, mut b) = groups[i];
        while b > a + 1 && sz.exact(units[a].s, units[b - 1].e) > max {
            b -= 1;
        }
        if b < groups[i].1 {
            groups.insert(i + 1, (b, groups[i].1));
            groups[i].1 = b;
            if i < info.len() {
                info.insert(i + 1, info[i]);
            }
        }
        i += 1;
    }
}

/// Token byte offsets of `[s, e)` encoded alone (not the document's tokens there:
/// byte-level BPE merges differently at the piece's edges, and the chunks must not
/// depend on whether the document's token map was kept).
fn token_starts(sz: &mut Sizer, s: usize, e: usize) -> Vec<usize> {
    match sz.tk.analyze(&sz.text[s..e], true, sz.cache) {
        Ok(doc) => doc.tokens.unwrap().start.iter().map(|&x| s + x as usize).collect(),
        Err(_) => sz.text[s..e].char_indices().map(|(i, _)| s + i).collect(),
    }
}

/// The last resort: windows cut at token boundaries (on a character
/// boundary), shrunk until the trimmed window re-encoded alone fits (a window
/// starting mid-word can count more tokens); each window starts where the
/// previous one ended.
fn token_units(sz: &mut Sizer, s: usize, e: usize, max: usize, out: &mut Vec<Unit>) {
    let starts = token_starts(sz, s, e);
    let n = starts.len();
    let text = sz.text;
    let cut = |k: usize| -> usize {
        if k == 0 {
            s
        } else if k >= n {
            e
        } else {
            floor_char(text, starts[k]).max(s)
        }
    };
    let (mut a, mut pos) = (0, s);
    while a < n {
        let ws = pos;
        let mut b = (a + max).min(n);
        while b < n && cut(b) <= ws {
            b += 1; // tokens inside the character at `ws` stay together
        }
        loop {
            let we = cut(b);
            let (ts, te) = trim(text, ws, we);
            let count = sz.exact(ts, te);
            if count <= max {
                if ts < te {
                    out.push(Unit { s: ts, e: te });
                }
                pos = we;
                break;
            }
            let shrunk = b.saturating_sub((count - max).max(1)).max(a + 1);
            if shrunk == b || cut(shrunk) <= ws {
                char_units(sz, ws, we, max, out);
                pos = we;
                break;
            }
            b = shrunk;
        }
        a = b;
        while a < n && cut(a) < pos {
            a += 1;
        }
    }
}

/// Cuts `[s, e)` between characters into the longest pieces that fit; a single
/// character that alone encodes above `max` (e.g. `max_tokens=1` and a
/// multi-byte character in byte-level BPE) is a piece of its own.
fn char_units(sz: &mut Sizer, s: usize, e: usize, max: usize, out: &mut Vec<Unit>) {
    let text = sz.text;
    let mut a = s;
    while a < e {
        let mut b = ceil_char(text, a + 1);
        while b < e {
            let next = ceil_char(text, b + 1);
            let (ts, te) = trim(text, a, next);
            if sz.exact(ts, te) > max {
                break;
            }
            b = next;
        }
        let (ts, te) = trim(text, a, b);
        if ts < te {
            out.push(Unit { s: ts, e: te });
        }
        a = b;
    }
}

/// The chunks of the groups: every group after the first of its `region`
/// (section) is preceded by [`overlap_tail`] of the previous group.
fn with_overlap_in(
    sz: &mut Sizer,
    units: &[Unit],
    groups: &[(usize, usize)],
    max: usize,
    overlap: usize,
    region: impl Fn(usize) -> usize,
) -> Vec<ChunkSpan> {
    let mut out = Vec::with_capacity(groups.len());
    for (i, &(a, b)) in groups.iter().enumerate() {
        let end = units[b - 1].e;
        let mut start = units[a].s;
        if overlap > 0 && i > 0 && region(i - 1) == region(i) {
            let prev = groups[i - 1];
            let prev_units = &units[prev.0..prev.1];
            if let Some(tail) = overlap_tail(sz, prev_units, end, overlap, max) {
                start = tail;
            }
        }
        out.push(ChunkSpan { start, end, tokens: sz.exact(start, end) });
    }
    out
}

/// Where the overlap in front of a chunk ending at `end` starts: the longest
/// tail of the previous group (`prev`, its units in order) made of whole pieces
/// that re-encodes to at most `overlap` tokens and leaves the chunk within
/// `max`. Pieces are tried coarsest first (the group's own units, then lines,
/// sentences, clauses, words); the first kind whose tail reaches half of
/// `overlap` wins, else the longest tail of any kind. Never the whole group
/// (the chunk would then hold its predecessor). None when no piece fits.
fn overlap_tail(sz: &mut Sizer, prev: &[Unit], end: usize, overlap: usize, max: usize) -> Option<usize> {
    let (ps, pe) = (prev[0].s, prev[prev.len() - 1].e);
    let mut best: Option<(usize, usize)> = None; // (tokens, start)
    let mut pieces: Vec<(usize, usize)> = prev.iter().map(|u| (u.s, u.e)).collect();
    let finer = [Level::Line, Level::Sentence, Level::Clause, Level::Word];
    for level in std::iter::once(None).chain(finer.iter().map(Some)) {
        if let Some(level) = level {
            pieces.clear();
            split_level(sz.text, ps, pe, level, &mut pieces);
        }
        let mut found: Option<(usize, usize)> = None;
        for &(a, _) in pieces.iter().rev() {
            if a <= ps {
                break;
            }
            let tokens = sz.exact(a, pe);
            if tokens > overlap || sz.exact(a, end) > max {
                break;
            }
            found = Some((tokens, a));
        }
        if let Some((tokens, a)) = found {
            if 2 * tokens >= overlap {
                return Some(a);
            }
            if best.is_none_or(|(t, _)| tokens > t) {
                best = Some((tokens, a));
            }
        }
    }
    best.map(|(_, a)| a)
}

/// Merges groups under `min_tokens` into a neighbour when the union fits.
fn apply_floor(sz: &mut Sizer, units: &[Unit], groups: &mut Vec<(usize, usize)>, min_tokens: usize, max: usize) {
    if min_tokens == 0 {
        return;
    }
    let span = |g: (usize, usize)| (units[g.0].s, units[g.1 - 1].e);
    let mut i = 0;
    while i < groups.len() {
        let (s, e) = span(groups[i]);
        if groups.len() == 1 || sz.exact(s, e) >= min_tokens {
            i += 1;
            continue;
        }
        if i > 0 && sz.exact(span(groups[i - 1]).0, e) <= max {
            groups[i - 1].1 = groups[i].1;
            groups.remove(i);
            i -= 1;
            continue;
        }
        if i + 1 < groups.len() && sz.exact(s, span(groups[i + 1]).1) <= max {
            groups[i].1 = groups[i + 1].1;
            groups.remove(i + 1);
            continue;
        }
        i += 1;
    }
}

/// Fixed token windows: `max` tokens, stride `max - overlap`, cut between
/// tokens (at a character boundary) and trimmed of whitespace. A window whose
/// text re-encodes above `max` (it starts mid-word) is shrunk; the next window
/// starts early enough that no token is skipped, and its overlap with this one
/// re-encodes to at most `overlap` tokens.
fn token_windows(sz: &mut Sizer, max: usize, overlap: usize) -> Vec<ChunkSpan> {
    let doc = sz.doc;
    let empty = Default::default();
    let tm = doc.tokens.as_ref().unwrap_or(&empty);
    let text = sz.text;
    let ntok = tm.start.len();
    // the cut before token k
    // the cut before token k: the first window starts at the text's start and the
    // last ends at its end, so characters that encode to no token (U+200B) are kept
    let cut = |k: usize| -> usize {
        if k == 0 {
            0
        } else if k >= ntok {
            text.len()
        } else {
            floor_char(text, tm.start[k] as usize)
        }
    };
    let mut out: Vec<ChunkSpan> = vec![];
    if ntok == 0 {
        // text of characters that encode to no token: one chunk of 0 tokens
        let (s, e) = trim(text, 0, text.len());
        if s < e {
            out.push(ChunkSpan { start: s, end: e, tokens: sz.exact(s, e) });
        }
        return out;
    }
    let (mut a, mut prev_b) = (0, 0);
    while a < ntok {
        let mut b = (a + max).min(ntok);
        while b < ntok && cut(b) <= cut(a) {
            b += 1; // tokens inside one character stay together
        }
        let (start, end, n) = loop {
            let (s, e) = trim(text, cut(a), cut(b));
            let n = sz.exact(s, e);
            if n <= max || b == a + 1 {
                break (s, e, n);
            }
            b = b.saturating_sub((n - max).max(1)).max(a + 1);
        };
        if out.last().is_some_and(|last| end <= last.end) && a < prev_b {
            a = prev_b; // the overlap left no room for anything new: restart without it
            continue;
        }
        if n > max {
            // one token whose text re-encodes above the limit alone (`##ße` is `ß` + `##e`):
            // cut it between characters; only a single character may still exceed
            let mut pieces = vec![];
            char_units(sz, start, end, max, &mut pieces);
            out.extend(pieces.iter().map(|u| ChunkSpan { start: u.s, end: u.e, tokens: sz.exact(u.s, u.e) }));
        } else if start < end {
            out.push(ChunkSpan { start, end, tokens: n });
        }
        prev_b = b;
        let (rest_start, rest_end) = trim(text, cut(b), text.len());
        if b >= ntok || rest_start >= rest_end {
            break; // nothing but whitespace tokens left
        }
        let mut next = (a + max - overlap).min(b - overlap.min(b - a - 1)).max(a + 1);
        let overlap_tokens = |sz: &mut Sizer, k: usize| {
            let (s, e) = trim(text, cut(k).min(end), end);
            sz.exact(s, e)
        };
        while next < b && (cut(next) <= start || overlap_tokens(sz, next) > overlap) {
            next += 1;
        }
        a = next;
    }
    out
}

/// A chunk of a structured document: its span, section, kind, and the span of
/// the context its representation repeats (a table's header), if any.
#[derive(Clone, Copy, Debug)]
pub struct StructuredSpan {
    pub span: ChunkSpan,
    pub section: usize,
    pub kind: Kind,
    pub context: Option<(usize, usize)>,
}

/// What each group of a structured document is: section, kind, context.
#[derive(Clone, Copy, Debug)]
struct GroupInfo {
    section: usize,
    kind: Kind,
    context: Option<(usize, usize)>,
}

/// Chunks a document along its outline: sections are hard boundaries; blocks
/// of a section merge greedily; a block too long is split by its own
/// structure (table rows with the header repeated as context, list items, code
/// at blank lines then lines, prose by the default hierarchy); a heading left
/// alone, and any group under `min_tokens`, merges into a neighbour of the same
/// section when the union fits. Limits are `(max, min_tokens, overlap)`; with
/// `with_ids`, each chunk's token ids from the same tokenization (see [`chunk_with`]).
pub fn chunk_structured(
    tk: &Tokenizer,
    text: &str,
    outline: &Outline,
    (max, min_tokens, overlap): (usize, usize, usize),
    with_ids: bool,
) -> Result<(Vec<StructuredSpan>, Ids)> {
    tk.with_cache(|cache| {
        let doc = tk.analyze(text, with_ids, cache)?;
        let mut sz = Sizer::new(tk, text, &doc, cache);
        let spans = structured_in(&mut sz, outline, max, min_tokens, overlap);
        let ids = if with_ids { Some(span_ids(&mut sz, spans.iter().map(|c| (c.span.start, c.span.end)))?) } else { None };
        Ok((spans, ids))
    })
}

/// A structured document's chunks as rows `(start, end, token_count, section, kind,
/// context_start, context_end)` in code point offsets (context -1 when none), the
/// heading path of each section, and the chunks' token ids when asked for.
pub type StructuredRows = (Vec<[i64; 7]>, Vec<Vec<String>>, Ids);

/// [`chunk_structured`] with the limits of `cfg` (a structured strategy), as [`StructuredRows`].
pub fn structured_rows(tk: &Tokenizer, cfg: &Config, text: &str, with_ids: bool) -> Result<StructuredRows> {
    let Strategy::Structured { syntax, min_tokens } = &cfg.strategy else {
        return Err(input!("this chunker has no document structure"));
    };
    let outline = crate::structure::outline(text, *syntax);
    let (spans, ids) = chunk_structured(tk, text, &outline, (cfg.max_tokens, *min_tokens, cfg.overlap), with_ids)?;
    let mut offs: Vec<usize> = spans
        .iter()
        .flat_map(|c| {
            let (cs, ce) = c.context.unwrap_or((0, 0));
            [c.span.start, c.span.end, cs, ce]
        })
        .collect();
    bytes_to_chars(text, &mut offs);
    let rows = spans
        .iter()
        .zip(offs.chunks_exact(4))
        .map(|(c, o)| {
            let (cs, ce) = if c.context.is_some() { (o[2] as i64, o[3] as i64) } else { (-1, -1) };
            [o[0] as i64, o[1] as i64, c.span.tokens as i64, c.section as i64, c.kind as i64, cs, ce]
        })
        .collect();
    Ok((rows, outline.sections, ids))
}

/// [`chunk_structured`] on the analysed document behind `sz`.
pub fn structured_in(sz: &mut Sizer, outline: &Outline, max: usize, min_tokens: usize, overlap: usize) -> Vec<StructuredSpan> {
    let full = max;
    // room for the overlap is reserved: a chunk's new text takes at most `max`
    let max = content_budget(full, overlap);
    let mut units: Vec<Unit> = vec![];
    let mut groups: Vec<(usize, usize)> = vec![];
    let mut info: Vec<GroupInfo> = vec![];
    let mut open: Option<usize> = None;
    for b in &outline.blocks {
        let meta = GroupInfo { section: b.section, kind: b.kind, context: None };
        // a list too long goes item by item, so that its first items can
        // stay with the paragraph that introduces it
        let pieces = if b.kind == Kind::List && b.parts.len() > 1 && sz.count(b.start, b.end) > max {
            tile(sz.text, b.start, b.end, &b.parts)
        } else {
            vec![(b.start, b.end)]
        };
        for (a, e) in pieces {
            if let Some(g) = open.filter(|&g| info[g].section == b.section && info[g].context.is_none()) {
                if sz.count(units[groups[g].0].s, e) <= max {
                    units.push(Unit { s: a, e });
                    groups[g].1 = units.len();
                    if info[g].kind == Kind::Heading || e - a > units[groups[g].0].e - units[groups[g].0].s {
                        info[g].kind = b.kind;
                    }
                    continue;
                }
            }
            if sz.count(a, e) <= max {
                units.push(Unit { s: a, e });
                groups.push((units.len() - 1, units.len()));
                info.push(meta);
                open = Some(groups.len() - 1);
            } else {
                if (a, e) == (b.start, b.end) {
                    split_block(sz, b, max, &mut units, &mut groups, &mut info);
                } else {
                    let item = Block { start: a, end: e, parts: vec![], header: None, ..*b };
                    split_block(sz, &item, max, &mut units, &mut groups, &mut info);
                }
                open = None;
            }
        }
    }
    verify_groups_with(sz, &units, &mut groups, max, &mut info);
    merge_small(sz, &units, &mut groups, &mut info, &outline.sections, min_tokens, max);
    let spans = with_overlap_in(sz, &units, &groups, full, overlap, |i| info[i].section);
    spans
        .into_iter()
        .zip(&info)
        .map(|(span, g)| StructuredSpan { span, section: g.section, kind: g.kind, context: g.context })
        .collect()
}

/// Pieces that tile `[s, e)` (trimmed), one per part, each from its part's start
/// to the next part's: text of the block between or after its parts (a link
/// definition the parser counted into a list) stays in the piece before it.
fn tile(text: &str, s: usize, e: usize, parts: &[(usize, usize)]) -> Vec<(usize, usize)> {
    (0..parts.len())
        .map(|k| {
            let start = if k == 0 { s } else { parts[k].0 };
            let end = parts.get(k + 1).map_or(e, |p| p.0);
            trim(text, start, end.max(start))
        })
        .filter(|(a, b)| a < b)
        .collect()
}

/// Splits one block too long for a chunk, by its own structure.
fn split_block(
    sz: &mut Sizer,
    b: &Block,
    max: usize,
    units: &mut Vec<Unit>,
    groups: &mut Vec<(usize, usize)>,
    info: &mut Vec<GroupInfo>,
) {
    let meta = GroupInfo { section: b.section, kind: b.kind, context: None };
    match b.kind {
        Kind::Table if b.header.is_some() && !b.parts.is_empty() => {
            let header = b.header.unwrap();
            // room for the header in later pieces' representation, unless it would crowd out the rows
            let reserve = Some(sz.count(header.0, header.1) + 1).filter(|&r| r <= max / 2).unwrap_or(0);
            // the first piece holds the header itself; later ones repeat it as context
            let mut rows = vec![(header.0, b.parts[0].1)];
            rows.extend(b.parts[1..].iter().copied());
            let pieces = tile(sz.text, b.start, b.end, &rows);
            let row_levels = [Level::Word];
            let mut open: Option<usize> = None;
            for (k, &(a, e)) in pieces.iter().enumerate() {
                let budget = if k == 0 { max } else { max.saturating_sub(reserve).max(1) };
                if let Some(g) = open {
                    let g_budget = if info[g].context.is_some() { max.saturating_sub(reserve).max(1) } else { max };
                    if sz.count(units[groups[g].0].s, e) <= g_budget {
                        units.push(Unit { s: a, e });
                        groups[g].1 = units.len();
                        continue;
                    }
                }
                let before = groups.len();
                split_group(sz, &row_levels, (a, e), 0, budget, units, groups);
                for _ in before..groups.len() {
                    info.push(GroupInfo { context: (k > 0).then_some(header), ..meta });
                }
                open = (groups.len() == before + 1).then_some(before);
            }
        }
        Kind::Code => split_group(sz, &[Level::Paragraph, Level::Line, Level::Word], (b.start, b.end), 0, max, units, groups),
        _ => split_group(sz, &Level::defaults(), (b.start, b.end), 0, max, units, groups),
    }
    while info.len() < groups.len() {
        info.push(meta);
    }
}

/// The floor of structured documents: a lone heading, or a group under
/// `min_tokens`, merges into the next (else the previous) group of its section
/// when the union fits; a heading whose section is empty merges into its first
/// subsection.
fn merge_small(
    sz: &mut Sizer,
    units: &[Unit],
    groups: &mut Vec<(usize, usize)>,
    info: &mut Vec<GroupInfo>,
    sections: &[Vec<String>],
    min_tokens: usize,
    max: usize,
) {
    let span = |g: (usize, usize)| (units[g.0].s, units[g.1 - 1].e);
    let mut i = 0;
    while i < groups.len() {
        let (s, e) = span(groups[i]);
        let small = info[i].kind == Kind::Heading || (min_tokens > 0 && sz.exact(s, e) < min_tokens);
        if !small {
            i += 1;
            continue;
        }
        let same = |j: usize, info: &[GroupInfo]| info[j].section == info[i].section && info[j].context.is_none();
        let child = |j: usize, info: &[GroupInfo]| {
            let (mine, theirs) = (&sections[info[i].section], &sections[info[j].section]);
            info[i].kind == Kind::Heading && theirs.len() > mine.len() && theirs.starts_with(mine)
        };
        if i + 1 < groups.len()
            && (same(i + 1, info) || child(i + 1, info))
            && info[i + 1].context.is_none()
            && sz.exact(s, span(groups[i + 1]).1) <= max
        {
            groups[i].1 = groups[i + 1].1;
            groups.remove(i + 1);
            let next = info.remove(i + 1);
            info[i].kind = next.kind;
            info[i].section = next.section;
            continue;
        }
        if i > 0 && info[i].kind != Kind::Heading && same(i - 1, info) && sz.exact(span(groups[i - 1]).0, e) <= max {
            groups[i - 1].1 = groups[i].1;
            groups.remove(i);
            info.remove(i);
            continue;
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> Tokenizer {
        let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json")).unwrap();
        Tokenizer::from_json(&json).unwrap()
    }

    const TEXT: &str = "Cats purr when they are content. They also purr when hurt, which puzzles owners.\n\n\
        Dogs bark at strangers, at the post, and at nothing at all. A trained dog barks less.\n\n\
        Fish swim. Birds sing at dawn, before the traffic starts, and again at dusk.";

    fn config(name: &str, max_tokens: usize, overlap: usize) -> Config {
        Config { strategy: Strategy::from_name(name, 0, 0, None).unwrap(), max_tokens, overlap }
    }

    /// Every chunk is a trimmed, non-empty slice in text order whose count is its count encoded alone, within the limit.
    fn check_contract(tk: &Tokenizer, text: &str, chunks: &[ChunkSpan], max: usize) {
        assert!(!chunks.is_empty());
        for (i, c) in chunks.iter().enumerate() {
            let piece = &text[c.start..c.end];
            assert!(!piece.is_empty() && piece.trim() == piece, "chunk {i} {piece:?} is not trimmed");
            let alone = tk.with_cache(|cache| tk.count(piece, cache)).unwrap();
            assert_eq!(c.tokens, alone, "chunk {i} {piece:?}: its count is not its count encoded alone");
            assert!(c.tokens <= max, "chunk {i} has {} tokens, over {max}", c.tokens);
            if i > 0 {
                assert!(chunks[i - 1].start < c.start, "chunk {i} starts before the one before it");
            }
        }
    }

    #[test]
    fn every_strategy_keeps_the_contract() {
        let tk = tokenizer();
        for name in ["token", "recursive", "sentence"] {
            for (max, overlap) in [(8, 0), (16, 4), (64, 0)] {
                let overlap = if name == "sentence" { 0 } else { overlap };
                let chunks = chunk(&tk, TEXT, &config(name, max, overlap)).unwrap();
                check_contract(&tk, TEXT, &chunks, max);
                let (first, last) = (chunks.first().unwrap(), chunks.last().unwrap());
                assert_eq!((first.start, last.end), (0, TEXT.len()), "{name} {max}: the chunks cover the text");
            }
        }
    }

    #[test]
    fn sentence_chunks_end_on_sentence_ends() {
        let tk = tokenizer();
        for c in chunk(&tk, TEXT, &config("sentence", 24, 0)).unwrap() {
            assert!(TEXT[..c.end].ends_with('.'), "{:?} does not end a sentence", &TEXT[c.start..c.end]);
        }
    }

    #[test]
    fn recursive_prefers_paragraphs_when_they_fit() {
        let tk = tokenizer();
        let chunks = chunk(&tk, TEXT, &config("recursive", 24, 0)).unwrap();
        let paragraphs: Vec<&str> = TEXT.split("\n\n").collect();
        let texts: Vec<&str> = chunks.iter().map(|c| &TEXT[c.start..c.end]).collect();
        assert_eq!(texts, paragraphs);
    }

    #[test]
    fn token_windows_repeat_the_overlap() {
        let tk = tokenizer();
        let chunks = chunk(&tk, TEXT, &config("token", 10, 3)).unwrap();
        let (_, ids) = chunk_with(&tk, TEXT, &config("token", 10, 3), true).unwrap();
        let (ids, bounds) = ids.unwrap();
        assert_eq!(bounds.len(), chunks.len() + 1);
        for i in 1..chunks.len() {
            let (prev, this) = (&ids[bounds[i - 1]..bounds[i]], &ids[bounds[i]..bounds[i + 1]]);
            assert_eq!(prev[prev.len() - 3..], this[..3], "window {i} does not start with the last 3 tokens of the one before");
        }
    }

    #[test]
    fn empty_and_blank_texts_have_no_chunks() {
        let tk = tokenizer();
        for text in ["", "  \n\t "] {
            let (chunks, ids) = chunk_with(&tk, text, &config("recursive", 8, 0), true).unwrap();
            assert!(chunks.is_empty());
            assert_eq!(ids, Some((vec![], vec![0])));
        }
    }

    #[test]
    fn strategies_by_name() {
        assert!(matches!(Strategy::from_name("sentence", 0, 2, None).unwrap(), Strategy::Sentence { overlap_sentences: 2 }));
        let seps = Some(vec!["; ".to_string()]);
        assert!(matches!(Strategy::from_name("recursive", 5, 0, seps).unwrap(), Strategy::Recursive { min_tokens: 5, ref levels } if levels.len() == 1));
        assert!(matches!(Strategy::from_name("rst", 0, 0, None).unwrap(), Strategy::Structured { syntax: Syntax::Rst, .. }));
        let err = Strategy::from_name("words", 0, 0, None).unwrap_err().to_string();
        assert!(err.contains("unknown strategy \"words\""), "{err}");
        let err = chunk(&tokenizer(), TEXT, &config("markdown", 8, 0)).unwrap_err().to_string();
        assert!(err.contains("chunk_structured"), "{err}");
    }
}
