//! Histograms that survive a trip through JSON: hdrhistogram V2+deflate, base64.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("histogram does not decode: {0:?}")]
    Decode(hdrhistogram::serialization::DeserializeError),
    #[error("histogram does not encode: {0:?}")]
    Encode(hdrhistogram::serialization::V2DeflateSerializeError),
}

/// A histogram of nanoseconds with 3 significant digits that grows as needed.
pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new(3).expect("3 significant digits is valid");
    h.auto(true);
    h
}

pub fn encode_histogram(h: &Histogram<u64>) -> Result<String, HistogramError> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(HistogramError::Encode)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s)?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(HistogramError::Decode)?;
    h.auto(true);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_count() {
        let mut h = new_histogram();
        for v in [13u64, 15, 15, 16, 600, 58_365, 5_000_000_000] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h).unwrap()).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.max(), h.max());
        assert_eq!(back.min(), h.min());
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(decode_histogram("not base64!").is_err());
        assert!(decode_histogram("AAAA").is_err());
    }
}
