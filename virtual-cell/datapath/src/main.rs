//! `rnf-cell-dp CONFIG.json`: runs the virtual cell's datapath until SIGTERM/SIGINT, standard input's EOF
//! or `duration_ms`. Exit 0 after a clean stop; 2 with one `rnf-cell-dp: error: ...` line otherwise.

use std::path::PathBuf;

fn main() {
    // Before any thread exists, so that only the signalfd sees SIGTERM and SIGINT.
    rnf_cell_dp::io::sys::block_stop_signals();
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let result = match args.as_slice() {
        [config] => rnf_cell_dp::datapath::run(config),
        _ => Err("usage: rnf-cell-dp CONFIG.json".to_string()),
    };
    if let Err(message) = result {
        eprintln!("rnf-cell-dp: error: {message}");
        std::process::exit(2);
    }
}
