// SPDX-License-Identifier: MIT
//
// bench/ipc's iceoryx2 peer: the same one-way latency experiment as
// bench/ipc/latency.c, over two iceoryx2 publish-subscribe services
// ("<name>/ping" and "<name>/pong"), both sides busy-polling (iceoryx2's
// subscriber has no blocking receive of its own; a blocking variant would
// add its event service).
//
//   iceoryx2-peer server <name> <count> <cpu> <out-file>
//   iceoryx2-peer client <name> <count> <cpu> <out-file>
//
// The client takes rdtsc before it loans the sample (where bench/ipc stamps
// bypass's messages: before bypass_ipc_send, which loans, copies and
// publishes), puts it in the 32-byte message and waits for a tiny ack; the
// server takes rdtsc when it has the message.  The server writes the
// one-way differences (server's TSC minus the client's: bypass-bench
// removes the two CPUs' TSC offset) and the client its round trips, both as
// u64 cycles, native endian, to their <out-file>.
use core::arch::x86_64::_rdtsc;
use iceoryx2::port::update_connections::UpdateConnections;
use iceoryx2::prelude::*;
use std::io::Write;

// 32 bytes: [rdtsc, sequence, 0, 0].
type Msg = [u64; 4];

fn pin(cpu: usize) {
    unsafe {
        let mut set: libc_cpu_set = core::mem::zeroed();
        set.bits[cpu / 64] |= 1u64 << (cpu % 64);
        sched_setaffinity(0, core::mem::size_of::<libc_cpu_set>(), &set);
    }
}

#[repr(C)]
struct libc_cpu_set {
    bits: [u64; 16],
}

extern "C" {
    fn sched_setaffinity(pid: i32, len: usize, set: *const libc_cpu_set) -> i32;
}

fn write_samples(out: &str, samples: Vec<u64>) -> std::io::Result<()> {
    let mut f = std::fs::File::create(out)?;
    let mut buf = Vec::with_capacity(samples.len() * 8);
    for v in samples {
        buf.extend_from_slice(&v.to_ne_bytes());
    }
    f.write_all(&buf)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!("usage: iceoryx2-peer server|client NAME COUNT CPU OUT");
        std::process::exit(2);
    }
    let role = args[1].as_str();
    let name = &args[2];
    let count: u64 = args[3].parse()?;
    let cpu: usize = args[4].parse()?;
    pin(cpu);
    set_log_level(LogLevel::Error);

    let node = NodeBuilder::new().create::<ipc::Service>()?;
    let ping = node
        .service_builder(&format!("{}/ping", name).as_str().try_into()?)
        .publish_subscribe::<Msg>()
        .open_or_create()?;
    let pong = node
        .service_builder(&format!("{}/pong", name).as_str().try_into()?)
        .publish_subscribe::<u64>()
        .open_or_create()?;

    if role == "server" {
        let sub = ping.subscriber_builder().create()?;
        let publ = pong.publisher_builder().create()?;
        // Tell the client we are ready: a file appears next to OUT.
        let out = &args[5];
        std::fs::write(format!("{}.ready", out), b"1")?;
        let mut samples: Vec<u64> = Vec::with_capacity(count as usize);
        let mut got = 0u64;
        while got < count {
            if let Some(s) = sub.receive()? {
                let t1 = unsafe { _rdtsc() };
                let m = *s.payload();
                drop(s);
                samples.push(t1.wrapping_sub(m[0]));
                got += 1;
                let ack = publ.loan_uninit()?.write_payload(m[1]);
                ack.send()?;
            } else {
                core::hint::spin_loop();
            }
        }
        write_samples(out, samples)?;
    } else {
        let publ = ping.publisher_builder().create()?;
        let sub = pong.subscriber_builder().create()?;
        // Wait until the server's subscriber is connected.
        while publ.update_connections().is_ok() && ping.dynamic_config().number_of_subscribers() == 0 {
            core::hint::spin_loop();
        }
        let mut rtts: Vec<u64> = Vec::with_capacity(count as usize);
        for seq in 0..count {
            let mut m: Msg = [0; 4];
            m[1] = seq;
            let t0 = unsafe { _rdtsc() };
            m[0] = t0;
            let sample = publ.loan_uninit()?;
            sample.write_payload(m).send()?;
            loop {
                if let Some(a) = sub.receive()? {
                    if *a.payload() == seq {
                        break;
                    }
                } else {
                    core::hint::spin_loop();
                }
            }
            rtts.push(unsafe { _rdtsc() }.wrapping_sub(t0));
        }
        write_samples(&args[5], rtts)?;
    }
    Ok(())
}
