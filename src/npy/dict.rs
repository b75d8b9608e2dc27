//! A strict parser of the Python dictionary literal in a `.npy` header: strings, `True`,
//! `False`, `None`, integers and tuples or lists of them, nested at most [`MAX_DEPTH`] deep.

/// A Python literal of a header.
#[derive(Debug)]
pub(super) enum Lit {
    Str(String),
    Bool(bool),
    /// A non-negative integer; `None` past u64.
    Int(Option<u64>),
    NegInt,
    None,
    Seq(Vec<Lit>),
}

/// Nesting allowed in a header's values (a structured dtype nests a few levels).
const MAX_DEPTH: usize = 16;

/// A strict parser of the dictionary literal numpy writes.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

/// Parses `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` and its padding.
pub(super) fn parse_dict(text: &str) -> std::result::Result<Vec<(String, Lit)>, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    p.ws();
    p.expect(b'{')?;
    let mut fields = Vec::new();
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = match p.value(0)? {
            Lit::Str(key) => key,
            _ => return Err("a header key is not a string".into()),
        };
        p.ws();
        p.expect(b':')?;
        p.ws();
        fields.push((key, p.value(0)?));
        p.ws();
        if p.eat(b'}') {
            break;
        }
        p.expect(b',')?;
    }
    p.ws();
    if p.i != p.s.len() {
        return Err("unexpected text after the header's dictionary".into());
    }
    Ok(fields)
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        match self.eat(c) {
            true => Ok(()),
            false => Err(format!(
                "its header is not a Python dictionary (expected {:?} at byte {})",
                c as char, self.i
            )),
        }
    }

    fn keyword(&mut self, word: &str) -> bool {
        let hit = self.s[self.i..].starts_with(word.as_bytes());
        if hit {
            self.i += word.len();
        }
        hit
    }

    fn value(&mut self, depth: usize) -> std::result::Result<Lit, String> {
        if depth > MAX_DEPTH {
            return Err("its header nests too deeply".into());
        }
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while let Some(c) = self.peek() {
                    if c == q {
                        let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                        self.i += 1;
                        return Ok(Lit::Str(text));
                    }
                    if c == b'\\' {
                        return Err("escapes in header strings are not supported".into());
                    }
                    self.i += 1;
                }
                Err("an unterminated string in its header".into())
            }
            Some(open @ (b'(' | b'[')) => {
                let close = if open == b'(' { b')' } else { b']' };
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.eat(close) {
                        return Ok(Lit::Seq(items));
                    }
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(close) {
                        return Ok(Lit::Seq(items));
                    }
                    self.expect(b',')?;
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                let negative = self.eat(b'-');
                let start = self.i;
                let mut value = Some(0u64);
                while let Some(c @ b'0'..=b'9') = self.peek() {
                    value = value
                        .and_then(|v| v.checked_mul(10))
                        .and_then(|v| v.checked_add(u64::from(c - b'0')));
                    self.i += 1;
                }
                if self.i == start {
                    return Err("a '-' without digits in its header".into());
                }
                self.eat(b'L'); // Python 2 long integers
                Ok(match negative && value != Some(0) {
                    true => Lit::NegInt,
                    false => Lit::Int(value),
                })
            }
            _ if self.keyword("True") => Ok(Lit::Bool(true)),
            _ if self.keyword("False") => Ok(Lit::Bool(false)),
            _ if self.keyword("None") => Ok(Lit::None),
            _ => Err(format!(
                "its header is not a Python dictionary (unexpected text at byte {})",
                self.i
            )),
        }
    }
}
