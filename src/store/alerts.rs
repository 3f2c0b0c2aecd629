//! Alerts and silences (tables alert, silence).
