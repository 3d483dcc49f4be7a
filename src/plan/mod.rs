//! Plan: typed scenario → validated [`Scenario`] (E03xx, E04xx, W0001, W0003, W0005, W0006),
//! with derived values, rank layout ([`layout`]) and the memory model ([`memory`]).

pub mod layout;
