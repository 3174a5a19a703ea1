//! The simulator: trace loaders (openb), saturation and time replay, metrics and reports.
