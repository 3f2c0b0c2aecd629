//! From a byte offset in the file to what a person looks for: line, column
//! and the dotted key (`cluster.logs`). toml's errors carry only a span, so
//! the key is found by parsing the file again into a tree of spanned keys and
//! values and descending to the innermost one that contains the offset.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

/// The dotted key at `offset` without array indices (`cluster.format`).
/// An offset on a key itself (an unknown field) names the table holding it,
/// since the message already quotes the key. None at the top level or when
/// the file does not parse.
pub(super) fn key_path(text: &str, offset: usize) -> Option<String> {
    let root: Node = toml::from_str(text).ok()?;
    let mut path = Vec::new();
    root.locate(offset, &mut path);
    (!path.is_empty()).then(|| path.join("."))
}

/// A TOML document reduced to the spans of its keys and values.
enum Node {
    Table(Vec<(Spanned<String>, Spanned<Node>)>),
    Array(Vec<Spanned<Node>>),
    Leaf,
}

impl Node {
    /// Pushes the keys leading to `offset` onto `path`; true when found.
    fn locate(&self, offset: usize, path: &mut Vec<String>) -> bool {
        match self {
            Node::Table(entries) => entries.iter().any(|(key, value)| {
                if key.span().contains(&offset) {
                    return true;
                }
                path.push(key.get_ref().clone());
                let found = value.get_ref().locate(offset, path) || value.span().contains(&offset);
                if !found {
                    path.pop();
                }
                found
            }),
            Node::Array(items) => {
                items.iter().any(|item| item.get_ref().locate(offset, path) || item.span().contains(&offset))
            }
            Node::Leaf => false,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Leaf)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    /// Tables, and also datetimes, which toml presents as a map whose one
    /// key has no span: a first key without a span means a datetime.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let Ok(mut key) = map.next_key::<Spanned<String>>() else { return Ok(Node::Leaf) };
        let mut entries = Vec::new();
        while let Some(k) = key {
            entries.push((k, map.next_value()?));
            key = map.next_key()?;
        }
        Ok(Node::Table(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_are_one_based_and_count_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        assert_eq!(line_column(text, text.find('"').unwrap()), (2, 6));
        assert_eq!(line_column(text, text.len()), (3, 1));
        assert_eq!(line_column(text, 8), (2, 2), "inside a multi-byte character");
    }

    #[test]
    fn keys_are_found_in_tables_arrays_and_inline_tables() {
        let text = "[store]\npath = 1\n\n[[cluster]]\nname = \"a\"\nlogs = [\n  \"x\",\n  5,\n]\n\n[[cluster]]\nname = \"b\"\nx = { y = 2 }\nwhen = 1979-05-27\n";
        let at = |needle: &str| key_path(text, text.find(needle).unwrap());
        assert_eq!(at("1\n").as_deref(), Some("store.path"));
        assert_eq!(at("5,").as_deref(), Some("cluster.logs"));
        assert_eq!(at("\"b\"").as_deref(), Some("cluster.name"));
        assert_eq!(at("2 }").as_deref(), Some("cluster.x.y"));
        assert_eq!(at("1979").as_deref(), Some("cluster.when"));
        assert_eq!(at("name = \"a\"").as_deref(), Some("cluster"), "a key names its table");
        assert_eq!(at("store"), None, "a top-level key");
    }

    #[test]
    fn no_key_when_the_file_does_not_parse() {
        assert_eq!(key_path("a = \n", 4), None);
    }
}
