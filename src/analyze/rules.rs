//! The alert rules: each reads the store and the settings and says what is
//! wrong now.
