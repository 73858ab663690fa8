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
        Level::Paragraph | Level::Line | Level::Word => {
            let min_newlines = match level {
                Level::Paragraph => 2,
                Level::Line => 1,
                _ => 0,
            };
            let mut piece_start = s;
            for (ws, we, newlines) in whitespace_runs(text, s, e) {
                if newlines >= min_newlines {
                    push(piece_start, ws);
                    piece_start = we;
                }
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

/// Maximal whitespace runs of `text[s..e]` as `(start, end, newline count)`.
fn whitespace_runs(text: &str, s: usize, e: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
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
        let mut newlines = 0;
        while i < e {
            let c = text[i..].chars().next().unwrap();
            if !c.is_whitespace() {
                break;
            }
            newlines += (c == '\n') as usize;
            i += c.len_utf8();
        }
        Some((start, i, newlines))
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
