//! The gang scheduler: node-order policies (binpack, FGD, ...) today; sessions, actions and plugins arrive with the scheduler issue.
