//! Splitting one input into the reads a network could have delivered it in.

/// `bytes` cut into pieces of 1 to 16 bytes, at places chosen by `seed`: the same input and
/// seed always give the same pieces, and the fuzzer explores the seed as part of the input.
pub fn pieces(seed: u8, bytes: &[u8]) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 0x9E37_0000;
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        // xorshift32: cheap and good enough to vary the cut points.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (1 + state % 16) as usize;
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        out.push(piece);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_cover_the_input_in_order() {
        let input: Vec<u8> = (0..=255).collect();
        for seed in [0, 1, 200] {
            let pieces = super::pieces(seed, &input);
            assert!(pieces.len() > 16 && pieces.iter().all(|p| (1..=16).contains(&p.len())));
            assert_eq!(pieces.concat(), input);
        }
    }
}
