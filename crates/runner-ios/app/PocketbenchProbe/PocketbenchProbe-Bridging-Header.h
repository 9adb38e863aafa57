// The probe's C ABI, for Swift: libpocketbench_probe_ffi.a, linked with
// -force_load (project.yml). The header lives with the crate that
// implements it, crates/probe-ffi/include.
#include "pocketbench_probe.h"
