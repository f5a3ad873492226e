//! `cargo test` links the test binary to libpython (pyo3 without `extension-module`): give it
//! the interpreter's library directory as its rpath, so that it runs with a Python installed
//! off the loader's path (pyenv, CI toolcaches). Builds of the module itself (the
//! `extension-module` feature, which maturin enables) link no libpython and get no rpath.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    pyo3_build_config::add_libpython_rpath_link_args();
}
