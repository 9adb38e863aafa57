//! Hands the target triple to the C-ABI tests, which compile C programs
//! against this crate's static library with the `cc` crate (outside a build
//! script it does not know the target).

fn main() {
    println!("cargo:rustc-env=PB_FFI_TARGET={}", std::env::var("TARGET").unwrap_or_default());
    println!("cargo:rerun-if-changed=build.rs");
}
