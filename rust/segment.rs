//! Where text may be cut: sentence segmentation and the separator hierarchy of
//! the recursive chunker. All functions produce trimmed, non-empty byte spans.

use unicode_segmentation::UnicodeSegmentation;

use crate::spans::trim;

/// One rung of the separator hierarchy, coarsest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Level {
    /// Blank lines.
    Paragraph,
    /// Line breaks.
    Line,
    /// Sentence ends (see [`sentences`]).
    Sentence,
    /// Clause punctuation (`,;:` before whitespace, CJK `，；：、`).
    Clause,
    /// Any whitespace.
    Word,
    /// A user-given separator string, kept at the end of the piece before it.
    Literal(String),
}

impl Level {
    pub fn defaults() -> Vec<Level> {
        vec![Level::Paragraph, Level::Line, Level::Sentence, Level::Clause, Level::Word]
    }
}

/// Pushes the trimmed, non-empty pieces of `text[s..e]` cut at `level`.
pub fn split_level(text: &str, s: usize, e: usize, level: &Level, out: &mut Vec<(usize, usize)>) {
    let mut push = |a: usize, b: usize| {
        let (a, b) = trim(text, a, b);
        if a < b {
            out.push((a, b));
        }
    };
    match level {
        Level::Paragraph | Level::Line => {
            let mut piece_start = s;
            newline_runs(text, s, e, if matches!(level, Level::Paragraph) { 2 } else { 1 }, |ws, we| {
                push(piece_start, ws);
                piece_start = we;
            });
            push(piece_start, e);
        }
        Level::Word => {
            let mut piece_start = s;
            for (ws, we) in whitespace_runs(text, s, e) {
                push(piece_start, ws);
                piece_start = we;
            }
            push(piece_start, e);
        }
        Level::Sentence => sentences(text, s, e, out),
        Level::Clause => {
            let mut piece_start = s;
            let mut chars = text[s..e].char_indices().peekable();
            while let Some((i, c)) = chars.next() {
                let cut = match c {
                    ',' | ';' | ':' => chars.peek().is_some_and(|&(_, n)| n.is_whitespace()),
                    '，' | '；' | '：' | '、' => true,
                    _ => false,
                };
                if cut {
                    let end = s + i + c.len_utf8();
                    push(piece_start, end);
                    piece_start = end;
                }
            }
            push(piece_start, e);
        }
        Level::Literal(sep) => {
            let mut piece_start = s;
            if !sep.is_empty() {
                for (i, _) in text[s..e].match_indices(sep.as_str()) {
                    let end = s + i + sep.len();
                    if end > piece_start {
                        push(piece_start, end);
                        piece_start = end;
                    }
                }
            }
            push(piece_start, e);
        }
    }
}

/// Calls `cut(start, end)` for each maximal whitespace run of `text[s..e]` that holds at
/// least `min_newlines` (>= 1) newlines, in order: the runs found from their newlines
/// (memchr), not by visiting every byte as [`whitespace_runs`] does.
fn newline_runs(text: &str, s: usize, e: usize, min_newlines: usize, mut cut: impl FnMut(usize, usize)) {
    let mut from = s;
    while let Some(at) = memchr::memchr(b'\n', &text.as_bytes()[from..e]) {
        let newline = from + at;
        // back to the run's start: `from` is `s` or the end of the last run (before a non-space)
        let start = from + text[from..newline].trim_end_matches(char::is_whitespace).len();
        let (mut end, mut newlines) = (newline, 0);
        for c in text[newline..e].chars().take_while(|c| c.is_whitespace()) {
            newlines += usize::from(c == '\n');
            end += c.len_utf8();
        }
        if newlines >= min_newlines {
            cut(start, end);
        }
        from = end;
    }
}

/// Maximal whitespace runs of `text[s..e]` as `(start, end)`.
fn whitespace_runs(text: &str, s: usize, e: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut i = s;
    std::iter::from_fn(move || {
        // find the next whitespace char
        while i < e {
            let b = bytes[i];
            if b < 0x80 {
                if (b as char).is_ascii_whitespace() || b == 0x0B {
                    break;
                }
                i += 1;
            } else {
                let c = text[i..].chars().next().unwrap();
                if c.is_whitespace() {
                    break;
                }
                i += c.len_utf8();
            }
        }
        if i >= e {
            return None;
        }
        let start = i;
        while i < e {
            let c = text[i..].chars().next().unwrap();
            if !c.is_whitespace() {
                break;
            }
            i += c.len_utf8();
        }
        Some((start, i))
    })
}

const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "cf", "fig",
    "figs", "no", "nos", "vol", "approx", "inc", "ltd", "co", "corp", "dept", "est", "al", "jan",
    "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "ph.d",
    "sec", "eq", "ch", "p", "pp", "resp", "viz", "ca",
];

fn ends_with_abbreviation(sentence: &str) -> bool {
    let Some(body) = sentence.strip_suffix('.') else { return false };
    let word = body.rsplit(|c: char| c.is_whitespace() || c == '(' || c == '"').next().unwrap_or("");
    if word.chars().count() == 1 && word.chars().all(|c| c.is_alphabetic()) {
        return true; // an initial: "J. R. R. Tolkien"
    }
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
}

fn ends_sentence(sentence: &str) -> bool {
    let core = sentence.trim_end_matches(['"', '\'', ')', ']', '”', '’', '」', '』', '）']);
    core.ends_with(['.', '!', '?', '。', '！', '？', '…', '‼', '⁇'])
}

/// Sentences of `text[s..e]`: Unicode (UAX #29) sentence boundaries, plus two
/// rules for real documents: a line break inside a sentence (hard-wrapped
/// text) is not a boundary unless the line ends with terminal punctuation or a
/// blank line follows, and common abbreviations ("Dr.", "e.g.") or initials
/// followed by a capital do not end a sentence.
pub fn sentences(text: &str, s: usize, e: usize, out: &mut Vec<(usize, usize)>) {
    let first = out.len();
    for (i, seg) in text[s..e].split_sentence_bound_indices() {
        let (a, b) = trim(text, s + i, s + i + seg.len());
        if a >= b {
            continue;
        }
        if out.len() > first {
            let (pa, pb) = *out.last().unwrap();
            let prev = &text[pa..pb];
            let gap = &text[pb..a];
            let newlines = gap.matches('\n').count();
            let join = (newlines == 0 && ends_with_abbreviation(prev))
                || (newlines == 1 && !ends_sentence(prev));
            if join {
                out.last_mut().unwrap().1 = b;
                continue;
            }
        }
        out.push((a, b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sents(text: &str) -> Vec<&str> {
        let mut out = vec![];
        sentences(text, 0, text.len(), &mut out);
        out.into_iter().map(|(a, b)| &text[a..b]).collect()
    }

    #[test]
    fn newline_runs_are_the_whitespace_runs_with_enough_newlines() {
        let alphabet = ['a', 'é', '中', ' ', '\n', '\r', '\t', '\u{b}', '\u{3000}', '\u{2028}', '\u{85}', '\u{a0}', '\u{1c}'];
        let mut state = 7u64;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..state % 40 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push(alphabet[(state >> 33) as usize % alphabet.len()]);
            }
            let bounds: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
            let (s, e) = (bounds[(state >> 20) as usize % bounds.len()], *bounds.last().unwrap());
            for min in [1, 2] {
                let mut got = vec![];
                newline_runs(&text, s, e, min, |a, b| got.push((a, b)));
                let newlines = |a: usize, b: usize| text[a..b].matches('\n').count();
                let want: Vec<(usize, usize)> = whitespace_runs(&text, s, e).filter(|&(a, b)| newlines(a, b) >= min).collect();
                assert_eq!(got, want, "{text:?} from {s}");
            }
        }
    }

    #[test]
    fn sentence_rules() {
        assert_eq!(
            sents("Dr. Smith paid $3.50 for it. Really? Yes... \"Fine.\" Then\nwrapped line. 你好。再见。"),
            ["Dr. Smith paid $3.50 for it.", "Really?", "Yes...", "\"Fine.\"", "Then\nwrapped line.", "你好。", "再见。"]
        );
    }

    #[test]
    fn levels() {
        let text = "a b\n\nc, d\ne";
        let mut out = vec![];
        split_level(text, 0, text.len(), &Level::Paragraph, &mut out);
        assert_eq!(out, vec![(0, 3), (5, 11)]);
        out.clear();
        split_level(text, 5, 11, &Level::Clause, &mut out);
        assert_eq!(out, vec![(5, 7), (8, 11)]);
    }
}
