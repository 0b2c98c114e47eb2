//! Root integration tests live in tests/tests/.
