//! C2SP checkpoints (c2sp.org/tlog-checkpoint): a log's origin, its size and its root hash, one
//! a line, signed as a note ([`super::note`]) by the log's key, named as the origin.

use super::merkle::Hash;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// A checkpoint's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's name (a schema-less URL: `provebench.example/lab`).
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

impl Checkpoint {
    /// The body: origin, size in decimal, base64 root, each on its line.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        )
    }

    /// Reads a body (extension lines after the third are allowed and ignored).
    pub fn parse(body: &str) -> Result<Checkpoint, String> {
        let mut lines = body.split_inclusive('\n');
        let mut line = |what: &str| -> Result<&str, String> {
            let l = lines
                .next()
                .ok_or(format!("a checkpoint needs its {what}"))?;
            let l = l
                .strip_suffix('\n')
                .ok_or(format!("the {what} line does not end in a newline"))?;
            if l.is_empty() {
                return Err(format!("the {what} line is empty"));
            }
            Ok(l)
        };
        let origin = line("origin")?.to_string();
        let size = line("size")?;
        if size.len() > 1 && size.starts_with('0') {
            return Err(format!("size {size:?} has a leading zero"));
        }
        let size: u64 = size
            .parse()
            .map_err(|_| format!("size {size:?} is not a number"))?;
        let root = STANDARD
            .decode(line("root hash")?)
            .map_err(|e| format!("root hash: {e}"))?;
        let root: Hash = root
            .try_into()
            .map_err(|_| "the root hash is not 32 bytes".to_string())?;
        Ok(Checkpoint { origin, size, root })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_reads_back_and_a_bad_one_is_named() {
        let c = Checkpoint {
            origin: "provebench.example/lab".into(),
            size: 70_000,
            root: [3; 32],
        };
        assert_eq!(Checkpoint::parse(&c.body()).unwrap(), c);
        assert!(Checkpoint::parse("o\n007\nAA==\n")
            .unwrap_err()
            .contains("leading zero"));
        assert!(Checkpoint::parse("o\n7\n")
            .unwrap_err()
            .contains("root hash"));
    }
}
