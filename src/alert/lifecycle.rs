//! The alert lifecycle: rule findings become alerts (firing -> notified ->
//! resolved), with one notification per firing.
