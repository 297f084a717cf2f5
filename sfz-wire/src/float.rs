//! Floats a findings file keeps. JSON has no NaN or infinity: serde_json writes them as `null`,
//! which reads back as no float at all, and the finding is lost. In human-readable formats a
//! non-finite value is written as `"NaN"`, `"inf"` or `"-inf"` (and `null` reads as NaN, as older
//! files have it); the worker protocol (postcard) keeps plain `f64`.
use serde::de::{self, Deserializer, Visitor};
use serde::ser::{SerializeSeq, Serializer};

fn write<S: Serializer>(v: f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() || !s.is_human_readable() {
        s.serialize_f64(v)
    } else if v.is_nan() {
        s.serialize_str("NaN")
    } else if v > 0.0 {
        s.serialize_str("inf")
    } else {
        s.serialize_str("-inf")
    }
}

struct FloatVisitor;

impl Visitor<'_> for FloatVisitor {
    type Value = f64;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a number, \"NaN\", \"inf\" or \"-inf\"")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_unit<E: de::Error>(self) -> Result<f64, E> {
        Ok(f64::NAN)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        match v {
            "NaN" | "nan" => Ok(f64::NAN),
            "inf" | "Infinity" => Ok(f64::INFINITY),
            "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

fn read<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    if d.is_human_readable() {
        d.deserialize_any(FloatVisitor)
    } else {
        d.deserialize_f64(FloatVisitor)
    }
}

/// `#[serde(with = "crate::float::one")]` on an `f64`.
pub mod one {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        super::write(*v, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        super::read(d)
    }
}

/// One float of a list, as `one` writes it.
struct Item(f64);

impl serde::Serialize for Item {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write(self.0, s)
    }
}

impl<'de> serde::Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Item, D::Error> {
        read(d).map(Item)
    }
}

/// `#[serde(with = "crate::float::list")]` on a `Vec<f64>`.
pub mod list {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{Item, SerializeSeq};

    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for x in v {
            seq.serialize_element(&Item(*x))?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Vec::<Item>::deserialize(d)?.into_iter().map(|i| i.0).collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::case::{Arg, Special};

    #[test]
    fn non_finite_floats_survive_a_findings_file_and_the_worker_protocol() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.5, 1e308] {
            for arg in [Arg::Float(v), Arg::FloatList(vec![1.0, v])] {
                let json = serde_json::to_string(&arg).unwrap();
                let back: Arg = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
                let wire: Arg = postcard::from_bytes(&postcard::to_stdvec(&arg).unwrap()).unwrap();
                for b in [back, wire] {
                    // NaN != NaN: compare the bits' meaning.
                    assert_eq!(format!("{b:?}"), format!("{arg:?}"), "{json}");
                }
            }
            let special = Special::Value(v);
            let back: Special = serde_json::from_str(&serde_json::to_string(&special).unwrap()).unwrap();
            assert_eq!(format!("{back:?}"), format!("{special:?}"));
        }
        // Files written before: a NaN argument as null.
        let old: Arg = serde_json::from_str(r#"{"Float":null}"#).unwrap();
        assert!(matches!(old, Arg::Float(v) if v.is_nan()));
    }
}
