//! `lyre`: the Lyre command line (serve, synth, ...). Everything lives in the library.

fn main() -> std::process::ExitCode {
    lyre_server::cli::main()
}
