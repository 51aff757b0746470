//! A serializer wrapper that refuses what JSON cannot read back: nesting
//! deeper than [`MAX_DEPTH`](crate::json::MAX_DEPTH) and non-finite floats
//! (which serde_json would write as `null`). It also bounds the recursion
//! itself: wrappers that add no JSON level (`Option`, `Box`, newtypes) may
//! nest [`MAX_FRAMES`] deep in all, so no value overflows the stack.

use std::cell::Cell;

use serde::ser::{self, Serialize, Serializer};

use crate::json::MAX_DEPTH;

/// How many values may be serialized inside one another, wrappers included
/// (a few per JSON level in any ordinary type).
const MAX_FRAMES: usize = 4 * MAX_DEPTH;

/// Why a guarded serialization stopped (kept beside the serializer's own
/// error, whose text is all it carries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    TooDeep,
    NonFinite,
}

/// Serializes `value` through `serializer`, refusing deep nesting and
/// non-finite floats; on such a refusal, `refused` says which.
pub(crate) fn serialize<T, S>(
    value: &T,
    serializer: S,
    refused: &Cell<Option<Refusal>>,
) -> Result<S::Ok, S::Error>
where
    T: Serialize + ?Sized,
    S: Serializer,
{
    let (depth, frames) = (Cell::new(0), Cell::new(0));
    value.serialize(Guard {
        inner: serializer,
        state: State {
            depth: &depth,
            frames: &frames,
            refused,
        },
    })
}

#[derive(Clone, Copy)]
struct State<'a> {
    depth: &'a Cell<usize>,
    frames: &'a Cell<usize>,
    refused: &'a Cell<Option<Refusal>>,
}

impl<'a> State<'a> {
    fn refuse<E: ser::Error>(self, refusal: Refusal) -> E {
        self.refused.set(Some(refusal));
        match refusal {
            Refusal::TooDeep => E::custom(format_args!("nests deeper than {MAX_DEPTH} levels")),
            Refusal::NonFinite => {
                E::custom("holds a NaN or infinite float, which JSON cannot store")
            }
        }
    }

    fn enter<E: ser::Error>(self) -> Result<(), E> {
        let depth = self.depth.get() + 1;
        if depth > MAX_DEPTH {
            return Err(self.refuse(Refusal::TooDeep));
        }
        self.depth.set(depth);
        Ok(())
    }

    /// Leaves `levels` levels.
    fn close(self, levels: usize) {
        self.depth.set(self.depth.get().saturating_sub(levels));
    }

    /// Enters `levels` levels, then opens the compound.
    fn open<C, E: ser::Error>(
        self,
        levels: usize,
        open: impl FnOnce() -> Result<C, E>,
    ) -> Result<Compound<'a, C>, E> {
        for _ in 0..levels {
            self.enter()?;
        }
        Ok(Compound {
            inner: open()?,
            state: self,
        })
    }
}

struct Guard<'a, S> {
    inner: S,
    state: State<'a>,
}

/// A value to serialize one level down, through the same guard.
struct Guarded<'a, 'v, T: ?Sized> {
    value: &'v T,
    state: State<'a>,
}

impl<T: Serialize + ?Sized> Serialize for Guarded<'_, '_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let frames = self.state.frames.get() + 1;
        if frames > MAX_FRAMES {
            return Err(self.state.refuse(Refusal::TooDeep));
        }
        self.state.frames.set(frames);
        let out = self.value.serialize(Guard {
            inner: serializer,
            state: self.state,
        });
        self.state.frames.set(frames - 1);
        out
    }
}

/// A compound (sequence, map, struct, ...) being serialized one level down.
struct Compound<'a, C> {
    inner: C,
    state: State<'a>,
}

macro_rules! forward_scalars {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
            self.inner.$method(v)
        })*
    };
}

impl<'a, S: Serializer> Serializer for Guard<'a, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Compound<'a, S::SerializeSeq>;
    type SerializeTuple = Compound<'a, S::SerializeTuple>;
    type SerializeTupleStruct = Compound<'a, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Compound<'a, S::SerializeTupleVariant>;
    type SerializeMap = Compound<'a, S::SerializeMap>;
    type SerializeStruct = Compound<'a, S::SerializeStruct>;
    type SerializeStructVariant = Compound<'a, S::SerializeStructVariant>;

    forward_scalars!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
    );

    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        if !v.is_finite() {
            return Err(self.state.refuse(Refusal::NonFinite));
        }
        self.inner.serialize_f32(v)
    }

    fn serialize_f64(self, v: f64) -> Result<S::Ok, S::Error> {
        if !v.is_finite() {
            return Err(self.state.refuse(Refusal::NonFinite));
        }
        self.inner.serialize_f64(v)
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_none()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        let state = self.state;
        self.inner.serialize_some(&Guarded { value, state })
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit()
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit_struct(name)
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit_variant(name, index, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let state = self.state;
        self.inner
            .serialize_newtype_struct(name, &Guarded { value, state })
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        // `{"variant": value}`: one level.
        let state = self.state;
        state.enter()?;
        let out =
            self.inner
                .serialize_newtype_variant(name, index, variant, &Guarded { value, state });
        state.close(1);
        out
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let Self { inner, state } = self;
        state.open(1, || inner.serialize_seq(len))
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let Self { inner, state } = self;
        state.open(1, || inner.serialize_tuple(len))
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        let Self { inner, state } = self;
        state.open(1, || inner.serialize_tuple_struct(name, len))
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        // `{"variant": [..]}`: two levels.
        let Self { inner, state } = self;
        state.open(2, || {
            inner.serialize_tuple_variant(name, index, variant, len)
        })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let Self { inner, state } = self;
        state.open(1, || inner.serialize_map(len))
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        let Self { inner, state } = self;
        state.open(1, || inner.serialize_struct(name, len))
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        // `{"variant": {..}}`: two levels.
        let Self { inner, state } = self;
        state.open(2, || {
            inner.serialize_struct_variant(name, index, variant, len)
        })
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A compound whose entries are values alone, `levels` deep.
macro_rules! compound_of_values {
    ($trait:ident, $method:ident, $levels:literal) => {
        impl<C: ser::$trait> ser::$trait for Compound<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
                let state = self.state;
                self.inner.$method(&Guarded { value, state })
            }

            fn end(self) -> Result<C::Ok, C::Error> {
                self.state.close($levels);
                self.inner.end()
            }
        }
    };
}

/// A compound whose entries are named fields, `levels` deep.
macro_rules! compound_of_fields {
    ($trait:ident, $levels:literal) => {
        impl<C: ser::$trait> ser::$trait for Compound<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), C::Error> {
                let state = self.state;
                self.inner.serialize_field(key, &Guarded { value, state })
            }

            fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
                self.inner.skip_field(key)
            }

            fn end(self) -> Result<C::Ok, C::Error> {
                self.state.close($levels);
                self.inner.end()
            }
        }
    };
}

compound_of_values!(SerializeSeq, serialize_element, 1);
compound_of_values!(SerializeTuple, serialize_element, 1);
compound_of_values!(SerializeTupleStruct, serialize_field, 1);
compound_of_values!(SerializeTupleVariant, serialize_field, 2);
compound_of_fields!(SerializeStruct, 1);
compound_of_fields!(SerializeStructVariant, 2);

impl<C: ser::SerializeMap> ser::SerializeMap for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), C::Error> {
        let state = self.state;
        self.inner.serialize_key(&Guarded { value: key, state })
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        let state = self.state;
        self.inner.serialize_value(&Guarded { value, state })
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.state.close(1);
        self.inner.end()
    }
}
