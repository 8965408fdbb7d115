// SPDX-License-Identifier: MIT
//! Safe Rust wrappers for libbypass, a C library that lets programs cross
//! the user/kernel boundary less often on an unmodified Linux kernel.
//!
//! One module per C module, over the raw bindings of [`bypass_sys`]:
//!
//! - [`notify`]: [`Doorbell`](notify::Doorbell)s between threads and
//!   processes (ring, wait with a timeout, poll, an eventfd for epoll);
//! - [`ipc`]: [`Service`](ipc::Service) and [`Conn`](ipc::Conn), messages
//!   loaned from a shared ring ([`Loan`](ipc::Loan)) and read in place
//!   ([`Msg`](ipc::Msg)), calls and replies, epoll integration;
//! - [`batch`]: system calls queued in a [`Segment`](batch::Segment) and
//!   entered once through io_uring when it is flushed;
//! - [`syslet`]: programs of system calls with branches, loops and results
//!   passed between atoms, built by a [`ProgramBuilder`](syslet::ProgramBuilder)
//!   and checked by the library's validator;
//! - [`pager`]: memory whose page faults are served in user space, with a
//!   budget and a swap file ([`Pager`](pager::Pager), [`Region`](pager::Region)).
//!
//! and [`core`] for what they share (the clock, shared arenas, descriptors
//! over Unix sockets, logging).
//!
//! Conventions: a C error (`-errno`) is a [`std::io::Error`]
//! ([`io::Error::raw_os_error`](std::io::Error::raw_os_error) gives the
//! errno back); a timeout is an `Option<Duration>`, `None` meaning no
//! limit and [`Duration::ZERO`](std::time::Duration::ZERO) not waiting;
//! options are builders.  `Send` and `Sync` are implemented only where the
//! C side documents that the object may be used that way, each with a
//! comment that says where.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub use bypass_sys as sys;

pub mod batch;
pub mod core;
pub mod ipc;
pub mod notify;
pub mod pager;
pub mod syslet;

mod util;

pub use crate::core::{version, WaitMode};
