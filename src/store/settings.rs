//! The settings timeline (table setting).
