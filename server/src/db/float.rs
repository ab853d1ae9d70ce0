//! An optional float, bound so that both backends take it.
//!
//! sqlx 0.9.0's Any driver sends a NULL `f64` to PostgreSQL as a NULL *float4*
//! (`AnyValueKind::Null(Double)` becomes `Option<f32>` in
//! `sqlx-core/src/any/arguments.rs`, and `Null(Real)` becomes `Option<f64>`).
//! A statement first prepared with a NULL there declares its parameter float4,
//! and a later 8-byte value in the cached statement is refused: "incorrect
//! binary data format in bind parameter". [`Float`] sends its NULL as an
//! `f32`'s (kind `Real`), which the same swap turns into a NULL float8.

use sqlx::any::{Any, AnyTypeInfo};
use sqlx::encode::{Encode, IsNull};
use sqlx::error::BoxDynError;
use sqlx::types::Type;

/// `Option<f64>` to bind (`.bind(Float(row.expected_pct))`).
#[derive(Clone, Copy, Debug)]
pub struct Float(pub Option<f64>);

impl Type<Any> for Float {
    fn type_info() -> AnyTypeInfo {
        <f64 as Type<Any>>::type_info()
    }
}

impl<'q> Encode<'q, Any> for Float {
    fn encode_by_ref(&self, buf: &mut <Any as sqlx::Database>::ArgumentBuffer) -> Result<IsNull, BoxDynError> {
        match self.0 {
            Some(value) => <f64 as Encode<'q, Any>>::encode_by_ref(&value, buf),
            None => <Option<f32> as Encode<'q, Any>>::encode_by_ref(&None, buf),
        }
    }
}
