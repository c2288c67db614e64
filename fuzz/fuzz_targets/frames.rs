//! The frame decoder: arbitrary bytes where a party expects a frame of any step.
#![no_main]

use libfuzzer_sys::fuzz_target;
use privlogit_circuits::channel::{Channel, MemoryChannel};
use privlogit_protocols::secure::wire::{self, Step};

fuzz_target!(|data: &[u8]| {
    let (mut a, mut b) = MemoryChannel::pair();
    if a.send(data).and_then(|()| a.flush()).is_err() {
        return;
    }
    drop(a);
    let all = [
        Step::Join,
        Step::Welcome,
        Step::Setup,
        Step::PublicKey,
        Step::Gradient,
        Step::GradientReply,
        Step::Masked,
        Step::MaskedReply,
        Step::Done,
    ];
    while wire::recv(&mut b, 0, &all).is_ok() {}
});
