//! What the items of a listing's page would take in memory once decoded,
//! measured on the page's JSON before anything of it is decoded, so that
//! a page past a listing's memory bound (`max_listed_memory`) is refused
//! without being built.
//!
//! An item counts its own size (`size_of`) and what each of its members
//! holds on the heap as `serde_json` builds it: a string as allocated
//! (its length plus 8 bytes, rounded up to 16, at least 32), an array
//! as its allocation of 32-byte values (grown by doubling from 4), and a
//! JSON object as the B-tree nodes it is kept in (640 bytes for up to 11
//! entries; past that, one per 5 entries, the most it can take) with its
//! keys. Typed
//! members are counted as if they were plain JSON, which is never less
//! than what they take. A member the decoded item fills in when the
//! server leaves it out (a tool's input schema) is counted then too.

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

/// One allocation of `len` bytes as the allocator hands it out: with its
/// header, rounded up to 16 bytes, at least 32.
const fn allocation(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let len = len.saturating_add(8);
    let len = if len < 32 { 32 } else { len };
    match len.checked_next_multiple_of(16) {
        Some(rounded) => rounded,
        None => usize::MAX,
    }
}

/// One node of the B-tree behind a JSON object: 11 keys, 11 values and
/// their links, as allocated.
const MAP_NODE: usize = 640;

/// What a tool's default input schema, `{"type":"object"}`, holds.
pub(crate) const DEFAULT_SCHEMA: usize = MAP_NODE + allocation(4) + allocation(6);

/// How one kind of item is counted. (Public only as a part of the sealed
/// [`Listed`](crate::client::Listed); not nameable outside the crate.)
#[derive(Debug, Clone, Copy)]
pub struct Item {
    /// The member of a page that holds the items (`tools`, …).
    pub member: &'static str,
    /// What each item takes whatever it holds: its own size.
    pub size: usize,
    /// A member filled in when absent, and what the filling holds.
    pub filled: Option<(&'static str, usize)>,
}

/// Why a page was not measured.
#[derive(Debug)]
pub(crate) enum Unmeasured {
    /// Its items take more than the room they had.
    Over,
    /// It is not a listing's page.
    Malformed(serde_json::Error),
}

/// What the items of the page `json` would take in memory, stopping at
/// the first item that takes them past `room` bytes.
pub(crate) fn page(json: &str, item: Item, room: usize) -> Result<usize, Unmeasured> {
    let over = Cell::new(false);
    let seed = Page {
        item,
        room,
        over: &over,
    };
    let mut reader = serde_json::Deserializer::from_str(json);
    match seed
        .deserialize(&mut reader)
        .and_then(|n| reader.end().map(|()| n))
    {
        Ok(memory) => Ok(memory),
        Err(_) if over.get() => Err(Unmeasured::Over),
        Err(e) => Err(Unmeasured::Malformed(e)),
    }
}

/// A page: its items are measured, its other members skipped.
struct Page<'a> {
    item: Item,
    room: usize,
    over: &'a Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Page<'_> {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Page<'_> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a listing's page")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        // A member sent twice is counted twice (the decode refuses it).
        let mut memory = 0;
        while let Some(items) = map.next_key_seed(IsKey(self.item.member))? {
            if items {
                memory = map.next_value_seed(Items {
                    item: self.item,
                    room: self.room,
                    over: self.over,
                    memory,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(memory)
    }
}

/// The items of a page, counted one by one onto `memory`.
struct Items<'a> {
    item: Item,
    room: usize,
    over: &'a Cell<bool>,
    memory: usize,
}

impl<'de> DeserializeSeed<'de> for Items<'_> {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of {}", self.item.member)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut memory = self.memory;
        while let Some(heap) = seq.next_element_seed(Members(self.item))? {
            memory = memory.saturating_add(self.item.size).saturating_add(heap);
            if memory > self.room {
                self.over.set(true);
                return Err(de::Error::custom("past the bound on memory"));
            }
        }
        Ok(memory)
    }
}

/// One item: the heap of its members (as an object, or as an array of
/// its fields in order, which a derived decoder also takes), and of the
/// member filled in when it is absent.
struct Members(Item);

impl<'de> DeserializeSeed<'de> for Members {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Members {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an item of {}", self.0.member)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let (name, filling) = self.0.filled.unwrap_or(("", 0));
        let mut heap = 0usize;
        let mut absent = filling;
        while let Some(filled) = map.next_key_seed(IsKey(name))? {
            if filled {
                absent = 0;
            }
            heap = heap.saturating_add(map.next_value::<Heap>()?.0);
        }
        Ok(heap.saturating_add(absent))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        // Fields by position: whether one was left out is not worth
        // telling apart, so the filling is counted.
        let mut heap = self.0.filled.map_or(0, |(_, filling)| filling);
        while let Some(field) = seq.next_element::<Heap>()? {
            heap = heap.saturating_add(field.0);
        }
        Ok(heap)
    }
}

/// Whether a key is the given name, read without keeping it.
struct IsKey(&'static str);

impl<'de> DeserializeSeed<'de> for IsKey {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for IsKey {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

/// What a JSON value holds on the heap as a `serde_json::Value`, read
/// without keeping it.
struct Heap(usize);

impl<'de> Deserialize<'de> for Heap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Heap, D::Error> {
        d.deserialize_any(HeapVisitor)
    }
}

struct HeapVisitor;

impl<'de> Visitor<'de> for HeapVisitor {
    type Value = Heap;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Heap, E> {
        Ok(Heap(0))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Heap, E> {
        Ok(Heap(0))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Heap, E> {
        Ok(Heap(0))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Heap, E> {
        Ok(Heap(0))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Heap, E> {
        Ok(Heap(0))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Heap, E> {
        Ok(Heap(allocation(s.len())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Heap, A::Error> {
        let (mut len, mut heap) = (0usize, 0usize);
        while let Some(element) = seq.next_element::<Heap>()? {
            len += 1;
            heap = heap.saturating_add(element.0);
        }
        // A vector grown one push at a time: 4 slots, then doubling.
        let slots = if len == 0 {
            0
        } else {
            len.next_power_of_two().max(4)
        };
        Ok(Heap(
            heap.saturating_add(allocation(slots.saturating_mul(VALUE))),
        ))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Heap, A::Error> {
        let (mut len, mut heap) = (0usize, 0usize);
        while let Some(key) = map.next_key::<Heap>()? {
            let value = map.next_value::<Heap>()?;
            len += 1;
            heap = heap.saturating_add(key.0).saturating_add(value.0);
        }
        // Up to 11 entries a node, and at least 5 in every node but the
        // root once it splits: at most one node per 5 entries.
        let nodes = match len {
            0 => 0,
            1..=11 => 1,
            n => n.div_ceil(5),
        };
        Ok(Heap(heap.saturating_add(nodes * MAP_NODE)))
    }
}

/// The size of one `serde_json::Value`.
const VALUE: usize = size_of::<serde_json::Value>();

#[cfg(test)]
mod tests {
    use super::*;

    const RESOURCE: Item = Item {
        member: "resources",
        size: 200,
        filled: None,
    };
    const TOOL: Item = Item {
        member: "tools",
        size: 200,
        filled: Some(("inputSchema", DEFAULT_SCHEMA)),
    };

    fn measure(json: &str, item: Item) -> usize {
        page(json, item, usize::MAX).unwrap()
    }

    #[test]
    fn allocations_round_as_the_allocator_does() {
        assert_eq!(allocation(0), 0);
        assert_eq!(allocation(1), 32);
        assert_eq!(allocation(24), 32);
        assert_eq!(allocation(25), 48);
        assert_eq!(allocation(usize::MAX), usize::MAX);
        assert_eq!(DEFAULT_SCHEMA, 704);
    }

    #[test]
    fn an_item_counts_its_size_and_its_members_not_their_names() {
        let json =
            r#"{"nextCursor":"c","resources":[{"uri":"u","name":"n"},{"uri":"","name":"n"}]}"#;
        assert_eq!(measure(json, RESOURCE), 200 + 32 + 32 + 200 + 32);
        // Escapes are counted as decoded.
        let escaped = r#"{"resources":[{"uri":"\u0041\u0042"}]}"#;
        assert_eq!(measure(escaped, RESOURCE), 200 + 32);
        assert_eq!(measure(r#"{"resources":[]}"#, RESOURCE), 0);
        assert_eq!(measure(r#"{"other":[{"uri":"u"}]}"#, RESOURCE), 0);
    }

    #[test]
    fn a_tool_without_a_schema_counts_the_default_one() {
        assert_eq!(measure(r#"{"tools":[{"name":"t"}]}"#, TOOL), 200 + 32 + 704);
        let given = r#"{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}"#;
        assert_eq!(measure(given, TOOL), 200 + 32 + 704);
        let empty = r#"{"tools":[{"name":"t","inputSchema":{}}]}"#;
        assert_eq!(measure(empty, TOOL), 200 + 32);
        // Fields by position, as a derived decoder takes them.
        assert_eq!(measure(r#"{"tools":[["t"]]}"#, TOOL), 200 + 32 + 704);
    }

    #[test]
    fn nested_values_count_every_node_array_and_string() {
        let json = r#"{"resources":[{"meta":{"a":[{"b":"x"},1,null],"c":{}}}]}"#;
        let array = allocation(4 * VALUE);
        // The item; `meta`'s node, "a", the array, its object's node,
        // "b", "x", "c" (an empty object holds nothing).
        let want = 200 + MAP_NODE + 32 + array + MAP_NODE + 32 + 32 + 32;
        assert_eq!(measure(json, RESOURCE), want);
        let wide: Vec<String> = (0..60).map(|i| format!(r#""k{i}":null"#)).collect();
        let json = format!(r#"{{"resources":[{{"m":{{{}}}}}]}}"#, wide.join(","));
        assert_eq!(measure(&json, RESOURCE), 200 + 12 * MAP_NODE + 60 * 32);
    }

    #[test]
    fn an_item_past_the_room_stops_the_measure() {
        let two = r#"{"resources":[{"uri":"u"},{"uri":"u"}]}"#;
        assert_eq!(page(two, RESOURCE, 464).unwrap(), 464);
        let three = r#"{"resources":[{"uri":"u"},{"uri":"u"},{"uri":"u"}]}"#;
        assert!(matches!(page(three, RESOURCE, 695), Err(Unmeasured::Over)));
        assert!(matches!(
            page(r#"{"resources":3}"#, RESOURCE, 1000),
            Err(Unmeasured::Malformed(_))
        ));
        assert!(matches!(
            page("[]", RESOURCE, 1000),
            Err(Unmeasured::Malformed(_))
        ));
    }
}
