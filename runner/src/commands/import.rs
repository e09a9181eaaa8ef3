//! `runner import FILE… --out DIR`: results people already have (the seed markdown tables,
//! `vllm bench serve` JSON) as unsigned documents marked imported, one file each. A file
//! that cannot be imported gets an error naming it, the line or JSON path and what was
//! expected; nothing is written for it, and the other files still import (exit 3 then).

use crate::cli::ImportArgs;
use crate::Failure;
use anyhow::anyhow;

pub fn run(args: &ImportArgs) -> Result<(), Failure> {
    let mut failed = 0;
    for file in &args.files {
        let name = file.display().to_string();
        let result = crate::read::document(file)
            .and_then(|bytes| importers::import(&name, &bytes).map_err(|e| anyhow!("{e}")));
        match result {
            Ok(docs) => {
                for d in docs {
                    let mut bytes =
                        serde_json::to_vec(&schemas::seal::envelope(&d.statement, None))
                            .expect("envelopes serialise");
                    bytes.push(b'\n');
                    let path = args.out.join(&d.name);
                    crate::files::write_atomically(&path, &bytes).map_err(Failure::Input)?;
                    println!("{}", path.display());
                }
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                failed += 1;
            }
        }
    }
    if failed > 0 {
        return Err(Failure::Input(anyhow!(
            "{failed} of {} files could not be imported",
            args.files.len()
        )));
    }
    Ok(())
}
