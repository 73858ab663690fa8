//! Model inputs: many texts tokenized once each (in parallel) and laid out as
//! padded `input_ids` / `attention_mask` rows, with the model's special tokens
//! and the tokens' character offsets, for the ONNX encoder.

use crate::error::Result;
use crate::spans::{bytes_to_chars, ceil_char};
use crate::tokenizer::Tokenizer;

/// Row-major `(n, width)` arrays; `offsets` is `(n, width, 2)` when asked for.
pub struct Padded {
    pub width: usize,
    pub input_ids: Vec<i64>,
    pub attention_mask: Vec<i64>,
    pub offsets: Option<Vec<i64>>,
    /// Tokens per row before truncation (special tokens included).
    pub full_lengths: Vec<i64>,
}

/// One text's ids and char offsets, special tokens added, cut at `max_length`.
pub fn encode_one(tk: &Tokenizer, text: &str, max_length: usize, special: bool) -> Result<(Vec<i64>, Vec<i64>, usize)> {
    let doc = tk.with_cache(|c| tk.analyze(text, true, c))?;
    let tm = doc.tokens.unwrap_or_default();
    let (prefix, suffix) = if special { tk.special_tokens() } else { (&[][..], &[][..]) };
    let full = prefix.len() + tm.ids.len() + suffix.len();
    let room = max_length.saturating_sub(prefix.len() + suffix.len());
    let kept = tm.ids.len().min(room);
    let mut ids = Vec::with_capacity(kept + prefix.len() + suffix.len());
    ids.extend(prefix.iter().map(|&i| i as i64));
    ids.extend(tm.ids[..kept].iter().map(|&i| i as i64));
    ids.extend(suffix.iter().map(|&i| i as i64));
    let mut offs: Vec<usize> = Vec::with_capacity(2 * ids.len());
    for k in 0..kept {
        offs.push(tm.start[k] as usize);
        offs.push(ceil_char(text, tm.end[k] as usize));
    }
    bytes_to_chars(text, &mut offs);
    let mut offsets = vec![0i64; 2 * prefix.len()];
    offsets.extend(offs.into_iter().map(|x| x as i64));
    offsets.extend(std::iter::repeat_n(0, 2 * suffix.len()));
    Ok((ids, offsets, full))
}

/// Pads the rows of [`encode_one`] to the longest (at most `max_length`).
pub fn pad(rows: Vec<(Vec<i64>, Vec<i64>, usize)>, pad_id: i64, with_offsets: bool) -> Padded {
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let n = rows.len();
    let mut out = Padded {
        width,
        input_ids: vec![pad_id; n * width],
        attention_mask: vec![0; n * width],
        offsets: with_offsets.then(|| vec![0; n * width * 2]),
        full_lengths: Vec::with_capacity(n),
    };
    for (r, (ids, offs, full)) in rows.into_iter().enumerate() {
        out.input_ids[r * width..r * width + ids.len()].copy_from_slice(&ids);
        out.attention_mask[r * width..r * width + ids.len()].fill(1);
        if let Some(o) = out.offsets.as_mut() {
            o[r * width * 2..r * width * 2 + offs.len()].copy_from_slice(&offs);
        }
        out.full_lengths.push(full as i64);
    }
    out
}
