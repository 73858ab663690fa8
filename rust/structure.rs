//! Document structure: the blocks of a document (paragraphs, tables, code,
//! lists, headings) and the sections that headings open. Markdown is parsed
//! with `pulldown-cmark` (CommonMark + GFM tables); reStructuredText and
//! AsciiDoc get their section titles recognised (underlined / overlined titles,
//! `== Title` lines), their bodies stay plain text.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::error::{input, Result};
use crate::spans::trim;

/// The markup whose headings open sections.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Syntax {
    Markdown,
    Rst,
    Asciidoc,
}

impl Syntax {
    /// The syntax called `name` (`"markdown"`, `"rst"`, `"asciidoc"`).
    pub fn from_name(name: &str) -> Result<Syntax> {
        match name {
            "markdown" => Ok(Syntax::Markdown),
            "rst" => Ok(Syntax::Rst),
            "asciidoc" => Ok(Syntax::Asciidoc),
            other => Err(input!("syntax must be 'markdown', 'rst' or 'asciidoc', not {other:?}")),
        }
    }
}

/// The outline of `text` in `syntax`.
pub fn outline(text: &str, syntax: Syntax) -> Outline {
    match syntax {
        Syntax::Markdown => markdown(text),
        Syntax::Rst => titled(text, false),
        Syntax::Asciidoc => titled(text, true),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Text = 0,
    Heading = 1,
    Table = 2,
    Code = 3,
    List = 4,
    Quote = 5,
    Html = 6,
}

/// A top-level block: its byte span, kind and section; `parts` are the rows of
/// a table (after its header) or the items of a list.
#[derive(Clone, Debug)]
pub struct Block {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
    pub section: usize,
    pub parts: Vec<(usize, usize)>,
    /// A table's header row.
    pub header: Option<(usize, usize)>,
}

/// Blocks in document order; `sections[i]` is the heading path of section `i`
/// (section 0 holds what comes before the first heading).
#[derive(Clone, Debug, Default)]
pub struct Outline {
    pub blocks: Vec<Block>,
    pub sections: Vec<Vec<String>>,
}

impl Outline {
    fn new() -> Self {
        Outline { blocks: vec![], sections: vec![vec![]] }
    }

    /// Opens a section for a heading of `level` (0 = outermost) titled `title`.
    fn open_section(&mut self, stack: &mut Vec<(usize, String)>, level: usize, title: String) -> usize {
        while stack.last().is_some_and(|(l, _)| *l >= level) {
            stack.pop();
        }
        stack.push((level, title));
        self.sections.push(stack.iter().map(|(_, t)| t.clone()).collect());
        self.sections.len() - 1
    }

    fn push(&mut self, text: &str, (s, e): (usize, usize), kind: Kind, section: usize) {
        let (s, e) = trim(text, s, e);
        if s < e {
            self.blocks.push(Block { start: s, end: e, kind, section, parts: vec![], header: None });
        }
    }

    /// Text outside every block (link definitions, stray lines) becomes text
    /// blocks, so that nothing but front matter is left out.
    fn fill_gaps(&mut self, text: &str, skip: Option<(usize, usize)>) {
        self.blocks.sort_by_key(|b| b.start);
        let mut extra = vec![];
        let mut pos = skip.map_or(0, |(_, e)| e);
        let mut section = 0;
        for b in &self.blocks {
            if b.start > pos {
                extra.push((pos, b.start, section));
            }
            pos = pos.max(b.end);
            section = b.section;
        }
        extra.push((pos, text.len(), section));
        for (s, e, sec) in extra {
            self.push(text, (s, e), Kind::Text, sec);
        }
        self.blocks.sort_by_key(|b| b.start);
    }
}

/// The byte span of the YAML front matter (`---` … `---`/`...` lines) that opens
/// `text`, if any. Only at the very start: a `---` … `---` block further down is
/// a thematic break and text, as on GitHub.
fn front_matter(text: &str) -> Option<(usize, usize)> {
    let opts = Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
    match Parser::new_ext(text, opts).into_offset_iter().next() {
        Some((Event::Start(Tag::MetadataBlock(_)), range)) if range.start == 0 => Some((range.start, range.end)),
        _ => None,
    }
}

/// The outline of a Markdown document. YAML front matter (at the start) is
/// metadata: it is in no block.
pub fn markdown(text: &str) -> Outline {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut out = Outline::new();
    let mut stack: Vec<(usize, String)> = vec![];
    let mut section = 0;
    let mut depth = 0usize;
    let front_matter = front_matter(text);
    // the body after the front matter is parsed alone, its offsets shifted back
    let base = front_matter.map_or(0, |(_, e)| e);
    let mut current: Option<Block> = None;
    let mut heading: Option<(usize, String)> = None;
    for (event, range) in Parser::new_ext(&text[base..], opts).into_offset_iter() {
        let range = range.start + base..range.end + base;
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    let kind = match &tag {
                        Tag::Heading { level, .. } => {
                            heading = Some((heading_level(*level), String::new()));
                            Kind::Heading
                        }
                        Tag::Table(_) => Kind::Table,
                        Tag::CodeBlock(_) => Kind::Code,
                        Tag::List(_) => Kind::List,
                        Tag::BlockQuote(_) => Kind::Quote,
                        Tag::HtmlBlock => Kind::Html,
                        _ => Kind::Text,
                    };
                    let (s, e) = trim(text, range.start, range.end);
                    current = Some(Block { start: s, end: e, kind, section, parts: vec![], header: None });
                } else if let Some(b) = current.as_mut() {
                    // rows and items of whitespace only (a U+3000 line in a table) are no part
                    let (s, e) = trim(text, range.start, range.end);
                    match (&tag, depth) {
                        (Tag::TableHead, 1) if s < e => b.header = Some((s, e)),
                        (Tag::TableRow, 1) | (Tag::Item, 1) if s < e => b.parts.push((s, e)),
                        _ => {}
                    }
                }
                depth += 1;
            }
            Event::End(tag) => {
                depth -= 1;
                if depth == 0 {
                    if let (TagEnd::Heading(_), Some((level, title))) = (tag, heading.take()) {
                        section = out.open_section(&mut stack, level, title.trim().to_string());
                        if let Some(b) = current.as_mut() {
                            b.section = section;
                        }
                    }
                    if let Some(b) = current.take() {
                        if b.start < b.end {
                            out.blocks.push(b);
                        }
                    }
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, title)) = heading.as_mut() {
                    title.push_str(&t);
                }
            }
            Event::Rule | Event::Html(_) if depth == 0 => out.push(text, (range.start, range.end), Kind::Text, section),
            _ => {}
        }
    }
    out.fill_gaps(text, front_matter);
    out
}

fn heading_level(level: HeadingLevel) -> usize {
    level as usize - 1
}

const ADORNMENTS: &str = "=-~^\"'`#*+:._<>!$%&(),/;?@[\\]{|}";

/// The adornment character of a line made of one repeated punctuation
/// character (at least 3), e.g. `=====`.
fn adornment(line: &str) -> Option<char> {
    let line = line.trim_end();
    let c = line.chars().next()?;
    (line.len() >= 3 && ADORNMENTS.contains(c) && line.chars().all(|x| x == c)).then_some(c)
}

/// The outline of a reStructuredText or AsciiDoc document: sections open at
/// underlined (optionally overlined) titles, levels in order of first use of
/// each adornment style, and, for AsciiDoc, at `== Title` lines. Bodies are
/// text blocks split at blank lines by the chunker.
pub fn titled(text: &str, asciidoc: bool) -> Outline {
    let mut lines = vec![];
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        lines.push((pos, pos + line.len(), line.trim_end_matches(['\n', '\r'])));
        pos += line.len();
    }
    let mut out = Outline::new();
    let mut stack = vec![];
    let mut styles: Vec<(char, bool)> = vec![];
    let mut section = 0;
    let mut body_start = 0;
    let blank = |i: usize| lines[i].2.trim().is_empty();
    let mut i = 0;
    while i < lines.len() {
        let (ls, le, line) = lines[i];
        let after_blank = i == 0 || blank(i - 1);
        let titled_line = !line.trim().is_empty() && !line.starts_with([' ', '\t']) && adornment(line).is_none();
        // (title start, title end, level, title text, lines used)
        let mut found: Option<(usize, usize, usize, String, usize)> = None;
        if titled_line && i + 1 < lines.len() {
            if let Some(c) = adornment(lines[i + 1].2) {
                let under = lines[i + 1].2.trim_end().chars().count();
                let title_len = line.trim_end().chars().count();
                let over = i > 0 && adornment(lines[i - 1].2) == Some(c);
                let before_ok = if over { i == 1 || blank(i - 2) } else { after_blank };
                if before_ok && under + 2 >= title_len {
                    let style = (c, over);
                    let level = styles.iter().position(|s| *s == style).unwrap_or_else(|| {
                        styles.push(style);
                        styles.len() - 1
                    });
                    let start = if over { lines[i - 1].0 } else { ls };
                    found = Some((start, lines[i + 1].1, level, line.trim().to_string(), 2));
                }
            }
        }
        if found.is_none() && asciidoc && after_blank {
            let eq = line.chars().take_while(|&c| c == '=').count();
            if (1..=6).contains(&eq) && line[eq..].starts_with(' ') && !line[eq..].trim().is_empty() {
                found = Some((ls, le, eq - 1, line[eq..].trim().to_string(), 1));
            }
        }
        if let Some((ts, te, level, title, used)) = found {
            out.push(text, (body_start, ts), Kind::Text, section);
            section = out.open_section(&mut stack, level, title);
            out.push(text, (ts, te), Kind::Heading, section);
            body_start = te;
            i += used;
        } else {
            i += 1;
        }
    }
    out.push(text, (body_start, text.len()), Kind::Text, section);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_sections_tables_and_front_matter() {
        let text = "---\ntitle: x\n---\n# A\n\npara\n\n## B\n\n| h | i |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n[ref]: http://x\n";
        let o = markdown(text);
        assert_eq!(o.sections, vec![vec![], vec!["A".to_string()], vec!["A".to_string(), "B".to_string()]]);
        let kinds: Vec<Kind> = o.blocks.iter().map(|b| b.kind).collect();
        assert_eq!(kinds, [Kind::Heading, Kind::Text, Kind::Heading, Kind::Table, Kind::Text]);
        let table = &o.blocks[3];
        let (hs, he) = table.header.unwrap();
        assert_eq!(&text[hs..he], "| h | i |");
        assert_eq!(table.parts.len(), 2);
        assert!(o.blocks[0].start > 10, "front matter is in no block");
    }

    #[test]
    fn rst_and_asciidoc_titles() {
        let text = "=====\nTitle\n=====\n\nIntro.\n\nPart\n----\n\nBody.\n\nNext\n----\nMore.\n";
        let o = titled(text, false);
        assert_eq!(o.sections[1], ["Title"]);
        assert_eq!(o.sections[2], ["Title", "Part"]);
        assert_eq!(o.sections[3], ["Title", "Next"]);
        let o = titled("= Doc\n\n== One\n\ntext\n", true);
        assert_eq!(o.sections.last().unwrap(), &["Doc".to_string(), "One".to_string()]);
    }
}
