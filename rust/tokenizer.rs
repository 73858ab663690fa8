//! The tokenizer: HF `tokenizers` loads the model and is the general path; a
//! fast path (our own pre-tokenizer + a per-word token cache in front of HF's
//! model) tokenizes each document once, exactly as HF does, several times faster.
//!
//! Output of a document's analysis is a [`DocTokens`]: its words (pre-token
//! spans, with a prefix sum of their token counts) and, on request, its tokens.
//! Every sizing decision of the chunkers runs on that map.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use aho_corasick::AhoCorasick;
use rustc_hash::FxHashMap;
use tokenizers::{
    Model, ModelWrapper, NormalizedString, Normalizer, NormalizerWrapper, PreTokenizerWrapper,
};
use tokenizers::tokenizer::normalizer::Range;

use crate::error::{input, Error, Result};
use crate::pretokenize::{PreTokenizer2, Scheme};

/// A token of a cached word: id and byte span relative to the word's start.
#[derive(Clone, Copy, Debug)]
struct Tok {
    id: u32,
    start: u32,
    end: u32,
}

/// Words longer than this (in bytes) are tokenized but not cached.
const MAX_CACHED_WORD: usize = 128;
/// A cache holding more distinct words than this is cleared.
const MAX_CACHED_WORDS: usize = 1 << 20;

/// Distinct words seen so far and their tokens. One per worker thread.
pub struct WordCache {
    map: FxHashMap<Box<str>, (u32, u32)>,
    /// The one-byte ASCII words of `map` (about half the words of prose and markup),
    /// found without hashing: `off << 8 | (len + 1)`, 0 for a byte not seen yet.
    ascii: [u64; 128],
    toks: Vec<Tok>,
    scratch: Vec<Tok>,
}

impl Default for WordCache {
    fn default() -> Self {
        WordCache { map: FxHashMap::default(), ascii: [0; 128], toks: vec![], scratch: vec![] }
    }
}

/// Token ids and byte spans of a document.
#[derive(Default, Debug, Clone)]
pub struct TokenMap {
    pub ids: Vec<u32>,
    pub start: Vec<u32>,
    pub end: Vec<u32>,
}

/// A document's words (byte spans, in order, non-overlapping) with the prefix
/// sum of their token counts: `cum[i]` = tokens in words `0..i`.
#[derive(Default, Debug, Clone)]
pub struct DocTokens {
    pub word_start: Vec<u32>,
    pub word_end: Vec<u32>,
    pub cum: Vec<u32>,
    pub tokens: Option<TokenMap>,
    /// True when the words are context free (the fast path): a span's count is
    /// exact from the prefix sums plus a recount of the words cut at its edges.
    pub exact_words: bool,
    /// Byte spans of the added tokens (`[CLS]`) in the text, in order: the fast
    /// path splits the text at them as HF does.
    pub added: Vec<(u32, u32)>,
}

impl DocTokens {
    /// Empty, with room for `words` words.
    fn new(with_tokens: bool, exact_words: bool, words: usize) -> Self {
        let mut cum = Vec::with_capacity(words + 1);
        cum.push(0);
        DocTokens {
            word_start: Vec::with_capacity(words),
            word_end: Vec::with_capacity(words),
            cum,
            tokens: with_tokens.then(TokenMap::default),
            exact_words,
            added: vec![],
        }
    }

    #[inline(always)]
    fn push_word(&mut self, start: usize, end: usize, ntok: usize) {
        self.word_start.push(start as u32);
        self.word_end.push(end as u32);
        let last = *self.cum.last().unwrap();
        self.cum.push(last + ntok as u32);
    }

    /// Its words packed to save beside the text and read back with
    /// [`DocTokens::from_saved`] instead of tokenizing it again: per word, three
    /// little-endian u16 `(gap since the last word's end, length, 2 * tokens + added)`
    /// (byte lengths; `added` 1 for an added token such as `[CLS]` written in the text),
    /// 6 bytes a word. None unless its words are context free (the fast path), it holds
    /// no tokens and every value fits 16 bits.
    pub fn saved(&self) -> Option<Vec<u8>> {
        if !self.exact_words || self.tokens.is_some() {
            return None;
        }
        let mut added = self.added.iter().peekable();
        let mut out = Vec::with_capacity(6 * self.word_start.len());
        let mut prev = 0;
        for i in 0..self.word_start.len() {
            let (s, e) = (self.word_start[i], self.word_end[i]);
            let is_added = added.next_if(|&&span| span == (s, e)).is_some();
            let tokens = 2 * u64::from(self.cum[i + 1] - self.cum[i]) + u64::from(is_added);
            for v in [u64::from(s - prev), u64::from(e - s), tokens] {
                out.extend_from_slice(&u16::try_from(v).ok()?.to_le_bytes());
            }
            prev = e;
        }
        Some(out)
    }

    /// The words of `text` read back from [`DocTokens::saved`], checked to be words
    /// of it in order (on character boundaries, not overlapping, each of at least one
    /// token); that they are this tokenizer's is the saver's promise.
    pub fn from_saved(text: &str, saved: &[u8]) -> Result<DocTokens> {
        if !saved.len().is_multiple_of(6) {
            return Err(input!("saved words are 6 bytes each, not {} bytes in all", saved.len()));
        }
        let mut doc = DocTokens::new(false, true, saved.len() / 6);
        let mut prev = 0usize;
        for (i, word) in saved.chunks_exact(6).enumerate() {
            let [gap, len, packed] = [0, 2, 4].map(|k| usize::from(u16::from_le_bytes([word[k], word[k + 1]])));
            let (s, e, n) = (prev + gap, prev + gap + len, packed >> 1);
            let word = len > 0 && e <= text.len() && text.is_char_boundary(s) && text.is_char_boundary(e);
            if !word || n == 0 || u64::from(*doc.cum.last().unwrap()) + n as u64 > u64::from(u32::MAX) {
                return Err(input!("word {i} ({s}-{e}, {n} tokens) is not the next word of the text"));
            }
            if packed & 1 == 1 {
                doc.added.push((s as u32, e as u32));
            }
            doc.push_word(s, e, n);
            prev = e;
        }
        Ok(doc)
    }
}

/// Byte-level BPE without dropout, prefixes or byte fallback: the merges of
/// HF's model applied by rank (GPT-2's algorithm, same result as HF's heap).
struct FastBpe {
    /// The id of each byte's GPT-2 character.
    byte_ids: [u32; 256],
    /// `(left, right)` -> `(rank, merged id)`.
    merges: FxHashMap<u64, (u32, u32)>,
}

impl FastBpe {
    fn new(json: &str, model: &ModelWrapper) -> Option<Self> {
        let ModelWrapper::BPE(bpe) = model else { return None };
        let plain = bpe.dropout.is_none_or(|d| d == 0.0)
            && bpe.continuing_subword_prefix.is_none()
            && bpe.end_of_word_suffix.is_none()
            && !bpe.ignore_merges
            && !bpe.byte_fallback;
        if !plain {
            return None;
        }
        let vocab = model.get_vocab();
        let mut byte_ids = [0u32; 256];
        for (b, id) in byte_ids.iter_mut().enumerate() {
            *id = *vocab.get(&BYTE_CHARS[b].to_string())?;
        }
        let spec: serde_json::Value = serde_json::from_str(json).ok()?;
        let mut merges = FxHashMap::default();
        for (rank, m) in spec["model"]["merges"].as_array()?.iter().enumerate() {
            let (a, b) = match m {
                serde_json::Value::String(s) => s.split_once(' ')?,
                serde_json::Value::Array(pair) => (pair.first()?.as_str()?, pair.get(1)?.as_str()?),
                _ => return None,
            };
            let (ia, ib, merged) = (*vocab.get(a)?, *vocab.get(b)?, *vocab.get(&format!("{a}{b}"))?);
            merges.entry(pair_key(ia, ib)).or_insert((rank as u32, merged));
        }
        Some(FastBpe { byte_ids, merges })
    }

    /// Pushes `(id, start, end)` byte spans of the tokens of `word`.
    fn tokenize(&self, word: &[u8], out: &mut Vec<(u32, usize, usize)>) {
        let mut syms: Vec<(u32, usize, usize)> =
            word.iter().enumerate().map(|(i, &b)| (self.byte_ids[b as usize], i, i + 1)).collect();
        let mut next = Vec::with_capacity(syms.len());
        loop {
            let best = syms
                .windows(2)
                .filter_map(|w| self.merges.get(&pair_key(w[0].0, w[1].0)).map(|&(rank, id)| (rank, w[0].0, w[1].0, id)))
                .min_by_key(|m| m.0);
            let Some((_, left, right, merged)) = best else { break };
            next.clear();
            let mut i = 0;
            while i < syms.len() {
                if i + 1 < syms.len() && syms[i].0 == left && syms[i + 1].0 == right {
                    next.push((merged, syms[i].1, syms[i + 1].2));
                    i += 2;
                } else {
                    next.push(syms[i]);
                    i += 1;
                }
            }
            std::mem::swap(&mut syms, &mut next);
        }
        out.extend(syms);
    }
}

fn pair_key(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

/// The added tokens (`[CLS]`, `<|endoftext|>`) as the fast path handles them.
enum Added {
    /// None.
    None,
    /// HF splits a text at every match of these (leftmost-longest, case
    /// sensitive: none is normalized, stripped or single-word, and no two can
    /// overlap or nest, so every occurrence is a match in any span holding it):
    /// the fast path runs between them, each match is one token of `ids`.
    Split { matcher: AhoCorasick, ids: Vec<u32> },
    /// Tokens the fast path does not model: a text where one may occur (any
    /// case) takes HF's pipeline.
    Other(AhoCorasick),
}

impl Added {
    fn new(hf: &tokenizers::Tokenizer) -> Added {
        let mut tokens: Vec<(u32, tokenizers::AddedToken)> = hf.get_added_tokens_decoder().into_iter().collect();
        if tokens.is_empty() {
            return Added::None;
        }
        tokens.sort_by_key(|(id, _)| *id);
        let contents: Vec<&str> = tokens.iter().map(|(_, t)| t.content.as_str()).collect();
        let simple = |t: &tokenizers::AddedToken| !t.normalized && !t.lstrip && !t.rstrip && !t.single_word && !t.content.is_empty();
        // no proper suffix of a token starts a token, and no token holds another
        let apart = |a: &str, b: &str| !a.char_indices().skip(1).any(|(k, _)| b.starts_with(&a[k..])) && (a == b || !a.contains(b));
        let distinct = contents.iter().collect::<std::collections::HashSet<_>>().len() == contents.len();
        let plain = !hf.get_added_vocabulary().get_encode_special_tokens()
            && distinct
            && tokens.iter().all(|(_, t)| simple(t))
            && contents.iter().all(|a| contents.iter().all(|b| apart(a, b)));
        if plain {
            let matcher = AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                .build(&contents)
                .expect("added tokens");
            Added::Split { matcher, ids: tokens.iter().map(|(id, _)| *id).collect() }
        } else {
            let patterns = contents.iter().filter(|c| !c.is_empty());
            Added::Other(AhoCorasick::builder().ascii_case_insensitive(true).build(patterns).expect("added tokens"))
        }
    }
}

#[allow(clippy::large_enum_variant)] // one per tokenizer, never moved
enum Path {
    /// Our pre-tokenizer + a word cache over the HF model.
    Fast { pre: PreTokenizer2, byte_level: bool, added: Added },
    /// HF's whole pipeline for each document.
    Hf,
}

pub struct Tokenizer {
    pub hf: tokenizers::Tokenizer,
    path: Path,
    caches: Mutex<Vec<WordCache>>,
    /// Special tokens the post-processor puts before and after one sequence.
    specials: (Vec<u32>, Vec<u32>),
    /// The padding id (`[PAD]`, `<pad>`), else 0.
    pub pad_id: u32,
    /// Our WordPiece, equal to HF's but without an allocation per candidate piece.
    wordpiece: Option<FastWordPiece>,
    /// Our byte-level BPE merges, equal to HF's for plain BPE models.
    bpe: Option<FastBpe>,
    /// How a word of printable ASCII normalizes on the BERT path: `Some(lowercase)`.
    ascii_lowercase: Option<bool>,
    /// Texts and bytes [`Self::analyze`] has tokenized (a diagnostic: tests
    /// check that each document is tokenized once).
    tokenized: (AtomicUsize, AtomicUsize),
}

/// Greedy longest-match-first WordPiece over HF's vocabulary (same result as
/// `tokenizers::models::wordpiece::WordPiece::tokenize`).
struct FastWordPiece {
    vocab: FxHashMap<Box<str>, u32>,
    /// Continuation pieces, keyed without their prefix (`##`).
    continuation: FxHashMap<Box<str>, u32>,
    longest: usize,
    unk: u32,
    max_chars: usize,
}

impl FastWordPiece {
    fn new(model: &ModelWrapper) -> Option<Self> {
        let ModelWrapper::WordPiece(wp) = model else { return None };
        let vocab: FxHashMap<Box<str>, u32> = model.get_vocab().into_iter().map(|(k, v)| (k.into(), v)).collect();
        let prefix = wp.continuing_subword_prefix.as_str();
        let continuation = vocab
            .iter()
            .filter_map(|(k, &v)| k.strip_prefix(prefix).filter(|_| !prefix.is_empty()).map(|r| (r.into(), v)))
            .collect();
        let unk = *vocab.get(wp.unk_token.as_str())?;
        let longest = vocab.keys().map(|k| k.len()).max().unwrap_or(0);
        Some(FastWordPiece { vocab, continuation, longest, unk, max_chars: wp.max_input_chars_per_word })
    }

    /// Pushes `(id, start, end)` byte spans of `word`'s pieces.
    fn tokenize(&self, word: &str, out: &mut Vec<(u32, usize, usize)>) {
        let first = out.len();
        if word.chars().count() > self.max_chars {
            out.push((self.unk, 0, word.len()));
            return;
        }
        let mut start = 0;
        while start < word.len() {
            let map = if start == 0 { &self.vocab } else { &self.continuation };
            let mut end = crate::spans::floor_char(word, (start + self.longest).min(word.len()));
            let mut found = None;
            while end > start {
                if let Some(&id) = map.get(&word[start..end]) {
                    found = Some(id);
                    break;
                }
                end = crate::spans::floor_char(word, end - 1);
            }
            match found {
                Some(id) => out.push((id, start, end)),
                None => {
                    out.truncate(first);
                    out.push((self.unk, 0, word.len()));
                    return;
                }
            }
            start = end;
        }
    }
}

impl Tokenizer {
    /// Loads a `tokenizer.json` given as a string. Truncation and padding are
    /// switched off: the chunkers count whole texts.
    pub fn from_json(json: &str) -> Result<Self> {
        Self::load(json).map_err(|e| Error::Tokenizer(format!("not a valid tokenizer.json: {e}")))
    }

    /// Loads a `tokenizer.json` file (see [`Self::from_json`]).
    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let json = std::fs::read_to_string(path).map_err(|source| Error::TokenizerFile { path: path.to_path_buf(), source })?;
        Self::load(&json).map_err(|e| Error::Tokenizer(format!("{} is not a valid tokenizer.json: {e}", path.display())))
    }

    /// [`Self::from_json`], failing with HF's reason.
    fn load(json: &str) -> Result<Self, tokenizers::Error> {
        let mut hf: tokenizers::Tokenizer = json.parse()?;
        hf.with_truncation(None)?;
        hf.with_padding(None);
        let path = Self::choose_path(&hf);
        let specials = Self::find_specials(&hf)?;
        let pad_id = ["[PAD]", "<pad>", "<|pad|>"].iter().find_map(|t| hf.token_to_id(t)).unwrap_or(0);
        let wordpiece = FastWordPiece::new(hf.get_model());
        let bpe = matches!(path, Path::Fast { byte_level: true, .. }).then(|| FastBpe::new(json, hf.get_model())).flatten();
        let ascii_lowercase = match (&path, hf.get_normalizer()) {
            (Path::Fast { byte_level: false, .. }, None) => Some(false),
            (Path::Fast { byte_level: false, .. }, Some(NormalizerWrapper::BertNormalizer(n))) => Some(n.lowercase),
            _ => None,
        };
        let tokenized = Default::default();
        Ok(Tokenizer { hf, path, caches: Mutex::new(Vec::new()), specials, pad_id, wordpiece, bpe, ascii_lowercase, tokenized })
    }

    /// Learns the single-sequence template (e.g. `[CLS] A [SEP]`) from HF's post-processor.
    fn find_specials(hf: &tokenizers::Tokenizer) -> Result<(Vec<u32>, Vec<u32>), tokenizers::Error> {
        let enc = hf.encode("a", true)?;
        let mask = enc.get_special_tokens_mask();
        let ids = enc.get_ids();
        let first = mask.iter().position(|&m| m == 0).unwrap_or(ids.len());
        let last = mask.iter().rposition(|&m| m == 0).map_or(first, |p| p + 1);
        Ok((ids[..first].to_vec(), ids[last..].to_vec()))
    }

    /// `(texts, bytes)` tokenized by [`Self::analyze`] so far.
    pub fn tokenized(&self) -> (usize, usize) {
        (self.tokenized.0.load(Ordering::Relaxed), self.tokenized.1.load(Ordering::Relaxed))
    }

    /// The special tokens added before and after a sequence.
    pub fn special_tokens(&self) -> (&[u32], &[u32]) {
        (&self.specials.0, &self.specials.1)
    }

    fn choose_path(hf: &tokenizers::Tokenizer) -> Path {
        let pre = match (hf.get_normalizer(), hf.get_pre_tokenizer()) {
            (None, Some(PreTokenizerWrapper::BertPreTokenizer(_))) => {
                Some((PreTokenizer2::bert(None), false))
            }
            (Some(n @ NormalizerWrapper::BertNormalizer(_)), Some(PreTokenizerWrapper::BertPreTokenizer(_))) => {
                Some((PreTokenizer2::bert(Some(n.clone())), false))
            }
            (None, Some(PreTokenizerWrapper::ByteLevel(bl))) if bl.use_regex && !bl.add_prefix_space => {
                Some((PreTokenizer2::gpt2(), true))
            }
            _ => None,
        };
        match pre {
            Some((pre, byte_level)) => Path::Fast { pre, byte_level, added: Added::new(hf) },
            None => Path::Hf,
        }
    }

    /// Whether whitespace makes tokens of its own (byte-level BPE), so that how a
    /// text's trailing whitespace splits depends on what follows it.
    pub fn tokenizes_whitespace(&self) -> bool {
        matches!(self.path, Path::Fast { byte_level: true, .. })
    }

    /// Whether documents go through the fast path (else HF's pipeline).
    pub fn is_fast(&self) -> bool {
        matches!(self.path, Path::Fast { .. })
    }

    /// Runs `f` with a word cache of this tokenizer (one per concurrent caller).
    pub fn with_cache<R>(&self, f: impl FnOnce(&mut WordCache) -> R) -> R {
        let mut cache = self.caches.lock().unwrap().pop().unwrap_or_default();
        let result = f(&mut cache);
        if cache.map.len() > MAX_CACHED_WORDS {
            cache = WordCache::default();
        }
        self.caches.lock().unwrap().push(cache);
        result
    }

    /// Number of tokens of `text`, without special tokens.
    pub fn count(&self, text: &str, cache: &mut WordCache) -> Result<usize> {
        let mut n = 0usize;
        if self.fast_walk(text, cache, &mut |_, _, toks, _| n += toks.len())? {
            return Ok(n);
        }
        Ok(self.hf_encode(text)?.len())
    }

    /// Tokenizes a document once: its words with token counts, and its tokens
    /// when `with_tokens`.
    pub fn analyze(&self, text: &str, with_tokens: bool, cache: &mut WordCache) -> Result<DocTokens> {
        if text.len() >= u32::MAX as usize {
            return Err(input!("a text longer than 4 GiB"));
        }
        self.tokenized.0.fetch_add(1, Ordering::Relaxed);
        self.tokenized.1.fetch_add(text.len(), Ordering::Relaxed);
        // prose and markup average about 4 bytes a word: the vectors rarely grow
        let mut doc = DocTokens::new(with_tokens, true, text.len() / 4 + 16);
        let fast = self.fast_walk(text, cache, &mut |s, e, toks, added| {
            if toks.is_empty() {
                return;
            }
            if added {
                doc.added.push((s as u32, e as u32));
            }
            doc.push_word(s, e, toks.len());
            if let Some(tm) = doc.tokens.as_mut() {
                for t in toks {
                    tm.ids.push(t.id);
                    tm.start.push(s as u32 + t.start);
                    tm.end.push(s as u32 + t.end);
                }
            }
        })?;
        if fast {
            if doc.word_start.capacity() > 2 * doc.word_start.len() + 16 {
                // long words (code, identifiers): give back the room guessed for more
                for v in [&mut doc.word_start, &mut doc.word_end, &mut doc.cum] {
                    v.shrink_to_fit();
                }
            }
            return Ok(doc);
        }
        self.analyze_hf(text, with_tokens)
    }

    /// The fast path: calls `f(start, end, tokens)` for every word of `text` in
    /// order (token spans relative to the word); the pieces between added tokens
    /// are pre-tokenized alone, as HF does, and each added token is a word of
    /// one token (`f`'s last argument true). Returns false (maybe after calls for some of the words) when
    /// the text needs HF's pipeline.
    fn fast_walk<F: FnMut(usize, usize, &[Tok], bool)>(&self, text: &str, cache: &mut WordCache, f: &mut F) -> Result<bool> {
        let Path::Fast { pre, added, .. } = &self.path else { return Ok(false) };
        let mut err = None;
        let mut piece = |base: usize, end: usize, f: &mut F| {
            let seg = &text[base..end];
            pre.words(seg, |s, e| {
                if err.is_some() {
                    return;
                }
                match self.word_tokens(&seg[s..e], cache) {
                    Ok((off, len)) => {
                        let toks = if off == u32::MAX { &cache.scratch[..] } else { &cache.toks[off as usize..off as usize + len] };
                        f(base + s, base + e, toks, false);
                    }
                    Err(x) => err = Some(x),
                }
            })
        };
        let ok = match added {
            Added::Other(any) if any.is_match(text) => false,
            Added::None | Added::Other(_) => piece(0, text.len(), f),
            Added::Split { matcher, ids } => {
                let mut pos = 0;
                let mut ok = true;
                for m in matcher.find_iter(text) {
                    ok = piece(pos, m.start(), f);
                    if !ok {
                        break;
                    }
                    f(m.start(), m.end(), &[Tok { id: ids[m.pattern().as_usize()], start: 0, end: (m.end() - m.start()) as u32 }], true);
                    pos = m.end();
                }
                ok && piece(pos, text.len(), f)
            }
        };
        match err {
            Some(e) => Err(e),
            None => Ok(ok),
        }
    }

    /// Tokens of one word: `(offset, len)` into the cache's arena, or
    /// `(u32::MAX, len)` for an uncached word left in `cache.scratch`.
    #[inline(always)]
    fn word_tokens(&self, word: &str, cache: &mut WordCache) -> Result<(u32, usize)> {
        if let &[b] = word.as_bytes() {
            let packed = cache.ascii.get(b as usize).copied().unwrap_or(0);
            if packed != 0 {
                return Ok(((packed >> 8) as u32, (packed & 0xff) as usize - 1));
            }
        }
        if let Some(&(off, len)) = cache.map.get(word) {
            return Ok((off, len as usize));
        }
        self.word_tokens_missed(word, cache)
    }

    /// [`Self::word_tokens`] of a word not in the cache (rare after the first pages: kept out
    /// of line, so that the hit path stays small).
    #[cold]
    #[inline(never)]
    fn word_tokens_missed(&self, word: &str, cache: &mut WordCache) -> Result<(u32, usize)> {
        let mut scratch = std::mem::take(&mut cache.scratch);
        scratch.clear();
        self.tokenize_word(word, &mut scratch)?;
        let len = scratch.len();
        if word.len() > MAX_CACHED_WORD {
            cache.scratch = scratch;
            return Ok((u32::MAX, len));
        }
        let off = cache.toks.len() as u32;
        cache.toks.extend_from_slice(&scratch);
        cache.scratch = scratch;
        cache.map.insert(word.into(), (off, len as u32));
        if let (&[b], true) = (word.as_bytes(), len < 0xff) {
            if let Some(slot) = cache.ascii.get_mut(b as usize) {
                *slot = u64::from(off) << 8 | (len as u64 + 1);
            }
        }
        Ok((off, len))
    }

    /// HF's normalizer (BERT) or byte mapping (byte level), then HF's model.
    fn tokenize_word(&self, word: &str, out: &mut Vec<Tok>) -> Result<()> {
        let Path::Fast { pre, byte_level, .. } = &self.path else { unreachable!() };
        let model: &ModelWrapper = self.hf.get_model();
        // quadratic in the word's length: long words go to HF's heap-based merge
        if let (true, Some(bpe), true) = (*byte_level, &self.bpe, word.len() <= MAX_CACHED_WORD) {
            let mut pieces = Vec::new();
            bpe.tokenize(word.as_bytes(), &mut pieces);
            out.extend(pieces.into_iter().map(|(id, s, e)| Tok { id, start: s as u32, end: e as u32 }));
            return Ok(());
        }
        if *byte_level {
            let mut mapped = String::with_capacity(word.len() * 2);
            let mut pos = Vec::with_capacity(word.len() + 1);
            for b in word.bytes() {
                pos.push(mapped.len());
                mapped.push(BYTE_CHARS[b as usize]);
            }
            pos.push(mapped.len());
            for t in model.tokenize(&mapped).map_err(hf_error)? {
                let s = pos.partition_point(|&p| p < t.offsets.0);
                let e = pos.partition_point(|&p| p < t.offsets.1);
                out.push(Tok { id: t.id, start: s as u32, end: e as u32 });
            }
            return Ok(());
        }
        let Scheme::Bert { normalizer } = &pre.scheme else { unreachable!() };
        if let Some(lowercase) = self.ascii_lowercase {
            if word.bytes().all(|b| (0x21..0x7F).contains(&b)) {
                // printable ASCII: the BERT normalizer only lowercases, offsets unchanged
                let lowered;
                let normalized = if lowercase {
                    lowered = word.to_ascii_lowercase();
                    lowered.as_str()
                } else {
                    word
                };
                return self.model_tokens(normalized, out, |a, b| a..b);
            }
        }
        let mut ns = NormalizedString::from(word);
        if let Some(n) = normalizer {
            n.normalize(&mut ns).map_err(hf_error)?;
        }
        // a CJK ideograph normalizes to " x ": the model sees it without the padding
        let normalized = ns.get();
        let body = normalized.trim_matches(char::is_whitespace);
        if body.is_empty() {
            return Ok(());
        }
        let shift = normalized.len() - normalized.trim_start_matches(char::is_whitespace).len();
        self.model_tokens(body, out, |a, b| {
            ns.convert_offsets(Range::Normalized(a + shift..b + shift)).unwrap_or(0..word.len())
        })
    }

    /// The model's tokens of a normalized word; `to_original` maps their byte
    /// spans back to the word as written.
    fn model_tokens(
        &self,
        normalized: &str,
        out: &mut Vec<Tok>,
        to_original: impl Fn(usize, usize) -> std::ops::Range<usize>,
    ) -> Result<()> {
        let mut push = |id: u32, a: usize, b: usize| {
            let r = to_original(a, b);
            out.push(Tok { id, start: r.start as u32, end: r.end as u32 });
        };
        if let Some(wp) = &self.wordpiece {
            let mut pieces = Vec::new();
            wp.tokenize(normalized, &mut pieces);
            for (id, a, b) in pieces {
                push(id, a, b);
            }
        } else {
            for t in self.hf.get_model().tokenize(normalized).map_err(hf_error)? {
                push(t.id, t.offsets.0, t.offsets.1);
            }
        }
        Ok(())
    }

    fn hf_encode(&self, text: &str) -> Result<tokenizers::Encoding> {
        self.hf.encode(text, false).map_err(hf_error)
    }

    /// The general path: HF's pipeline; words from its word ids.
    fn analyze_hf(&self, text: &str, with_tokens: bool) -> Result<DocTokens> {
        let enc = self.hf_encode(text)?;
        let mut doc = DocTokens::new(with_tokens, false, enc.len());
        let offsets = enc.get_offsets();
        let word_ids = enc.get_word_ids();
        let mut i = 0;
        while i < offsets.len() {
            let mut j = i + 1;
            while j < offsets.len() && word_ids[j].is_some() && word_ids[j] == word_ids[i] {
                j += 1;
            }
            let start = offsets[i..j].iter().map(|o| o.0).min().unwrap();
            let end = offsets[i..j].iter().map(|o| o.1).max().unwrap();
            let n = doc.word_start.len();
            if n > 0 && (start as u32) < doc.word_end[n - 1] {
                // overlapping words: fold into the previous one
                doc.word_end[n - 1] = doc.word_end[n - 1].max(end as u32);
                doc.cum[n] += (j - i) as u32;
            } else {
                doc.push_word(start, end.max(start), j - i);
            }
            i = j;
        }
        if let Some(tm) = doc.tokens.as_mut() {
            tm.ids = enc.get_ids().to_vec();
            tm.start = offsets.iter().map(|o| o.0 as u32).collect();
            tm.end = offsets.iter().map(|o| o.1 as u32).collect();
        }
        Ok(doc)
    }
}

/// GPT-2's byte-to-character table (`bytes_to_unicode`).
/// An error of HF's pipeline while tokenizing.
fn hf_error(e: tokenizers::Error) -> Error {
    Error::Tokenizer(e.to_string())
}

static BYTE_CHARS: std::sync::LazyLock<[char; 256]> = std::sync::LazyLock::new(|| {
    let mut table = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u32 {
        let printable = (b'!' as u32..=b'~' as u32).contains(&b)
            || (0xA1..=0xAC).contains(&b)
            || (0xAE..=0xFF).contains(&b);
        table[b as usize] = if printable {
            char::from_u32(b).unwrap()
        } else {
            n += 1;
            char::from_u32(255 + n).unwrap()
        };
    }
    table
});

#[cfg(test)]
mod tests {
    use super::*;

    fn minilm() -> Tokenizer {
        let json = std::fs::read_to_string("python/chunkforge/data/all-MiniLM-L6-v2.tokenizer.json").unwrap();
        Tokenizer::from_json(&json).unwrap()
    }

    #[test]
    fn fast_path_equals_hf() {
        let tk = minilm();
        assert!(tk.is_fast());
        for text in ["Hello, World! Ünïcödé 中文 text\u{0}x [CLS] here", "naïve café\r\n\tdone", ""] {
            let hf = tk.hf.encode(text, false).unwrap();
            let doc = tk.with_cache(|c| tk.analyze(text, true, c)).unwrap();
            let tm = doc.tokens.unwrap();
            assert_eq!(tm.ids, hf.get_ids());
            let hf_starts: Vec<u32> = hf.get_offsets().iter().map(|o| o.0 as u32).collect();
            assert_eq!(tm.start, hf_starts);
            assert_eq!(doc.cum.last().copied().unwrap() as usize, hf.len());
        }
    }

    #[test]
    fn saved_words_read_back_as_analyzed() {
        let tk = minilm();
        let text = "Hello, World! [CLS] naïve café, 中文.";
        let doc = tk.with_cache(|c| tk.analyze(text, false, c)).unwrap();
        let saved = doc.saved().unwrap();
        assert_eq!(saved.len(), 6 * doc.word_start.len());
        let back = DocTokens::from_saved(text, &saved).unwrap();
        assert_eq!(back.added.len(), 1); // [CLS] is an added token
        assert_eq!((back.word_start, back.word_end, back.cum, back.added), (doc.word_start, doc.word_end, doc.cum, doc.added));
        // not words of the text: past its end, inside a character, empty, no tokens, a torn word
        let n = text.len() as u16;
        let cafe = text.find('é').unwrap() as u16;
        for bad in [[0, n + 1, 2], [cafe + 1, 1, 2], [3, 0, 2], [0, 2, 0]] {
            let bytes: Vec<u8> = bad.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert!(DocTokens::from_saved(text, &bytes).is_err(), "{bad:?}");
        }
        assert!(DocTokens::from_saved(text, &saved[..7]).is_err());
        assert!(tk.with_cache(|c| tk.analyze(text, true, c)).unwrap().saved().is_none());
    }

    #[test]
    fn byte_table_is_gpt2() {
        assert_eq!(BYTE_CHARS[b' ' as usize], 'Ġ');
        assert_eq!(BYTE_CHARS[b'\n' as usize], 'Ċ');
        assert_eq!(BYTE_CHARS[b'a' as usize], 'a');
    }
}
