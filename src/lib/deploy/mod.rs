//! Checking and configuring the privilege-separated deployment of
//! `docs/security.md`: [`check`] (`deploy check`) reports whether owners,
//! modes, the collect wrapper and its sudoers rule, what the agent's user
//! can open, the endpoint and the managed Stop hook are as that set-up
//! needs; [`config`] (`deploy config`) writes `serve`'s workspace
//! configuration from the authority's registered repositories and
//! installed requirements. [`probe`] tries paths as another user.

pub mod check;
pub mod config;
pub mod probe;
